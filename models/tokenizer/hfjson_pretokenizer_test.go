package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeByteHF writes a tokenizer.json whose vocab is the 256 byte characters (ids 0–255)
// and the digit merges 1+2, 12+3, 4+5, 123+45, with the given pre_tokenizer, and returns
// its path. Any text encodes; how "12345" comes out tells the pre-tokenizer's cut.
func writeByteHF(t *testing.T, pre any) string {
	t.Helper()
	vocab := map[string]int{}
	for b := range 256 {
		vocab[string(byteToRune[b])] = b
	}
	merges := []string{"1 2", "12 3", "4 5", "123 45"}
	for i, w := range []string{"12", "123", "45", "12345"} {
		vocab[w] = 256 + i
	}
	doc := map[string]any{
		"added_tokens":  []map[string]any{{"id": 260, "content": "<|im_start|>", "special": true}},
		"normalizer":    nil,
		"pre_tokenizer": pre,
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

func hfSplit(regex string) map[string]any {
	return map[string]any{"type": "Split", "pattern": map[string]any{"Regex": regex}, "behavior": "Isolated", "invert": false}
}

func hfByteLevelEntry(useRegex bool) map[string]any {
	return map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": useRegex}
}

func hfSequence(entries ...any) map[string]any {
	return map[string]any{"type": "Sequence", "pretokenizers": entries}
}

// TestHFSplitPreTokenizers: a Sequence of Split regexes and ByteLevel (use_regex false) runs
// the regexes, by the hand-written stages where their text is known.
func TestHFSplitPreTokenizers(t *testing.T) {
	const n12, n123, n45, n12345 = 256, 257, 258, 259
	for _, c := range []struct {
		name string
		pre  any
		want string // PreTokenizer()
		ids  []int  // of "12345"
	}{
		{"byte-level alone", hfByteLevelEntry(true), "gpt-2", []int{n12345}},
		{"llama3", hfSequence(hfSplit(regexLlama3HF), hfByteLevelEntry(false)), "llama3", []int{n123, n45}},
		{"llama3 as llama.cpp writes it", hfSequence(hfSplit(regexLlama3), hfByteLevelEntry(false)), "llama3", []int{n123, n45}},
		{"qwen2", hfSequence(hfSplit(regexQwen2HF), hfByteLevelEntry(false)), "qwen2", []int{'1', '2', '3', '4', '5'}},
		{"deepseek-coder", hfSequence(hfSplit(regexLineBreak), hfSplit(regexSpaceLetters), hfSplit(regexSpacePunct),
			hfSplit(regexDeepseekCJK), hfSplit(regexNumber), hfByteLevelEntry(false)), "deepseek-coder", []int{'1', '2', '3', '4', '5'}},
		{"starcoder digits", hfSequence(map[string]any{"type": "Digits", "individual_digits": true}, hfByteLevelEntry(true)), "starcoder", []int{'1', '2', '3', '4', '5'}},
		{"regexp2", hfSequence(hfSplit(`\d{2}|\p{L}+`), hfByteLevelEntry(false)), "custom", []int{n12, '3', '4', '5'}},
		{"literal string", hfSequence(map[string]any{"type": "Split", "pattern": map[string]any{"String": "3"}, "behavior": "Isolated"}, hfByteLevelEntry(true)),
			"custom", []int{n12, '3', n45}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok, err := FromHFTokenizerJSON(writeByteHF(t, c.pre))
			require.NoError(t, err)
			require.Equal(t, c.want, tok.PreTokenizer())
			ids, err := tok.Encode("12345", false)
			require.NoError(t, err)
			require.Equal(t, c.ids, ids, "%q", pieces(tok, ids))
			for _, text := range []string{"Hello, y'all! 123 ½ 你好\n\n  x", "\xff\xfe", ""} {
				ids, err := tok.Encode(text, false)
				require.NoError(t, err)
				back, err := tok.Decode(ids)
				require.NoError(t, err)
				require.Equal(t, text, back)
			}
			ids, err = tok.Tokenize("<|im_start|>12", false, true)
			require.NoError(t, err)
			require.Equal(t, 260, ids[0], "special tokens are matched before the regexes")
		})
	}
}

// TestHFPreTokenizerErrors: entries that would cut differently from what the package runs
// are refused, naming the entry.
func TestHFPreTokenizerErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		pre  any
		want string
	}{
		{"removed", hfSequence(map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "x"}, "behavior": "Removed"}, hfByteLevelEntry(false)),
			`pre_tokenizer: pretokenizers[0] (Split): behavior "Removed" is not supported (want Isolated)`},
		{"inverted", hfSequence(map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "x"}, "behavior": "Isolated", "invert": true}, hfByteLevelEntry(false)),
			"pretokenizers[0] (Split): invert true"},
		{"no pattern", hfSequence(map[string]any{"type": "Split", "behavior": "Isolated"}, hfByteLevelEntry(false)), "pattern missing"},
		{"bad regex", hfSequence(hfSplit(`(x`), hfByteLevelEntry(false)), `regex "(x"`},
		{"byte-level first", hfSequence(hfByteLevelEntry(false), hfSplit("x")), "pretokenizers[0] (ByteLevel): ByteLevel must come last"},
		{"no byte-level", hfSequence(hfSplit("x")), "no ByteLevel entry"},
		{"prefix space after split", hfSequence(hfSplit("x"), map[string]any{"type": "ByteLevel", "add_prefix_space": true, "use_regex": false}),
			"add_prefix_space after Split"},
		{"whitespace", hfSequence(map[string]any{"type": "Whitespace"}, hfByteLevelEntry(false)), `pretokenizers[0] (Whitespace): type "Whitespace" is not supported`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeByteHF(t, c.pre)
			_, err := FromHFTokenizerJSON(p)
			require.Error(t, err)
			require.Contains(t, err.Error(), p)
			require.Contains(t, err.Error(), c.want)
		})
	}
}
