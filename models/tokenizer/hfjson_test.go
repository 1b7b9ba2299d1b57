package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// tinyHFVocab is a byte-level vocab for "hello world": the characters, then what the merges
// make.
var tinyHFVocab = []string{"h", "e", "l", "o", "w", "r", "d", "Ġ", "he", "ll", "llo", "hello", "Ġw", "or", "Ġwor", "Ġworl", "Ġworld"}

// tinyHFMerges in rank order.
var tinyHFMerges = []string{"h e", "l l", "ll o", "he llo", "Ġ w", "o r", "Ġw or", "Ġwor l", "Ġworl d"}

// writeTinyHF writes a tokenizer.json (and, with config, a tokenizer_config.json) into a
// fresh directory and returns the tokenizer.json's path. edit may change the JSON object.
func writeTinyHF(t *testing.T, pairMerges bool, config map[string]any, edit func(map[string]any)) string {
	t.Helper()
	vocab := map[string]int{}
	for i, w := range tinyHFVocab {
		vocab[w] = i
	}
	var merges any = tinyHFMerges
	if pairMerges {
		var pairs [][2]string
		for _, m := range tinyHFMerges {
			a, err := splitMerge(m)
			require.NoError(t, err)
			pairs = append(pairs, a)
		}
		merges = pairs
	}
	n := len(tinyHFVocab)
	doc := map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{
			{"id": n, "content": "<|endoftext|>", "special": true},
			{"id": n + 1, "content": "<tool>", "special": false},
		},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false,
			"vocab": vocab, "merges": merges,
		},
	}
	if edit != nil {
		edit(doc)
	}
	dir := t.TempDir()
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	p := filepath.Join(dir, "tokenizer.json")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	if config != nil {
		data, err := json.Marshal(config)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), data, 0o644))
	}
	return p
}

// TestHFTokenizerJSON encodes and decodes with a tiny tokenizer.json, in both merges formats.
func TestHFTokenizerJSON(t *testing.T) {
	eot, tool := len(tinyHFVocab), len(tinyHFVocab)+1
	for _, pairs := range []bool{false, true} {
		p := writeTinyHF(t, pairs, nil, nil)
		tok, err := FromHFTokenizerJSON(p)
		require.NoError(t, err)
		require.Equal(t, ByteLevelBPE, tok.Kind())
		require.Equal(t, len(tinyHFVocab)+2, tok.VocabSize())
		require.Equal(t, eot, tok.EOS(), "<|endoftext|> is EOS")
		require.Equal(t, eot, tok.BOS(), "and BOS, as in GPT-2")
		require.False(t, tok.AddsBOS())
		require.True(t, tok.IsSpecial(eot))
		require.Equal(t, TypeUserDefined, tok.Type(tool))

		for _, c := range []struct {
			text string
			want []int
		}{
			{"hello world", []int{11, 16}}, // hello, Ġworld
			{"hello", []int{11}},
			{"world", []int{4, 13, 2, 6}},                      // w or l d: "Ġw" needs the space
			{"hellohello", []int{11, 11}},                      // he llo | he llo
			{"hello<tool>world", []int{11, tool, 4, 13, 2, 6}}, // the user-defined token is matched first
			{"hell", []int{8, 9}},                              // he, ll: "llo" needs the o
			{"  world", []int{7, 16}},                          // Ġ | Ġworld
		} {
			ids, err := tok.Encode(c.text, true)
			require.NoError(t, err, c.text)
			require.Equal(t, c.want, ids, "%q: %q", c.text, pieces(tok, ids))
			back, err := tok.Decode(ids)
			require.NoError(t, err)
			require.Equal(t, c.text, back)
		}
		// Special text is not parsed, and the characters the tiny vocab has no token for
		// (<, |, n, f, t, x) are dropped, as llama.cpp drops them.
		ids, err := tok.Encode("<|endoftext|>", false)
		require.NoError(t, err)
		require.Equal(t, []int{1, 6, 3, 1}, ids, "%q", pieces(tok, ids))
		text, err := tok.Decode([]int{11, eot, 16})
		require.NoError(t, err)
		require.Equal(t, "hello world", text, "<|endoftext|> decodes to nothing")
	}
}

// TestHFTokenizerConfig: a tokenizer_config.json next to tokenizer.json names BOS and says to
// add it; Load finds a tokenizer.json in a directory.
func TestHFTokenizerConfig(t *testing.T) {
	eot := len(tinyHFVocab)
	p := writeTinyHF(t, false, map[string]any{
		"bos_token":     map[string]any{"content": "<|endoftext|>"},
		"eos_token":     "<|endoftext|>",
		"add_bos_token": true,
	}, nil)
	tok, err := Load(filepath.Dir(p))
	require.NoError(t, err)
	ids, err := tok.Encode("hello", true)
	require.NoError(t, err)
	require.Equal(t, []int{eot, 11}, ids)
	ids, err = tok.Encode("hello", false)
	require.NoError(t, err)
	require.Equal(t, []int{11}, ids)
}

// TestHFTemplateProcessing: a TemplateProcessing post-processor names BOS and adds it.
func TestHFTemplateProcessing(t *testing.T) {
	eot := len(tinyHFVocab)
	p := writeTinyHF(t, false, nil, func(doc map[string]any) {
		doc["post_processor"] = map[string]any{
			"type": "Sequence",
			"processors": []any{
				map[string]any{"type": "ByteLevel"},
				map[string]any{"type": "TemplateProcessing", "single": []any{
					map[string]any{"SpecialToken": map[string]any{"id": "<|endoftext|>", "type_id": 0}},
					map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				}},
			},
		}
	})
	tok, err := FromHFTokenizerJSON(p)
	require.NoError(t, err)
	require.True(t, tok.AddsBOS())
	ids, err := tok.Encode("hello", true)
	require.NoError(t, err)
	require.Equal(t, []int{eot, 11}, ids)
}

// TestHFAddPrefixSpace: ByteLevel add_prefix_space puts a space before text that has none.
func TestHFAddPrefixSpace(t *testing.T) {
	p := writeTinyHF(t, false, nil, func(doc map[string]any) {
		doc["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true}
	})
	tok, err := FromHFTokenizerJSON(p)
	require.NoError(t, err)
	ids, err := tok.Encode("world", false)
	require.NoError(t, err)
	require.Equal(t, []int{16}, ids) // Ġworld
}

// TestHFErrors: unsupported or malformed fields give errors naming the file and the field.
func TestHFErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"wordpiece", func(d map[string]any) { d["model"].(map[string]any)["type"] = "WordPiece" }, `model.type: "WordPiece"`},
		{"byte fallback", func(d map[string]any) { d["model"].(map[string]any)["byte_fallback"] = true }, "model.byte_fallback"},
		{"metaspace", func(d map[string]any) { d["pre_tokenizer"] = map[string]any{"type": "Metaspace"} }, `pre_tokenizer: Metaspace: type "Metaspace" is not supported`},
		{"no pre-tokenizer", func(d map[string]any) { d["pre_tokenizer"] = nil }, "pre_tokenizer: missing"},
		{"normalizer", func(d map[string]any) { d["normalizer"] = map[string]any{"type": "NFC"} }, "normalizer"},
		{"no vocab", func(d map[string]any) { delete(d["model"].(map[string]any), "vocab") }, "model.vocab: missing"},
		{"gap in ids", func(d map[string]any) { d["model"].(map[string]any)["vocab"].(map[string]int)["hello"] = 40 }, "model.vocab: no token has id 11"},
		{"bad merge", func(d map[string]any) { d["model"].(map[string]any)["merges"] = []string{"h e", "he"} }, `model.merges: [1]: merge "he"`},
		{"no merges", func(d map[string]any) { delete(d["model"].(map[string]any), "merges") }, "model.merges: missing"},
		{"unknown unk", func(d map[string]any) { d["model"].(map[string]any)["unk_token"] = "<unk>" }, `model.unk_token: "<unk>"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeTinyHF(t, false, nil, c.edit)
			_, err := FromHFTokenizerJSON(p)
			require.Error(t, err)
			require.Contains(t, err.Error(), p)
			require.Contains(t, err.Error(), c.want)
		})
	}
	t.Run("not json", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "tokenizer.json")
		require.NoError(t, os.WriteFile(p, []byte("GGUF?"), 0o644))
		_, err := FromHFTokenizerJSON(p)
		require.ErrorContains(t, err, p)
	})
	t.Run("missing", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "tokenizer.json")
		_, err := FromHFTokenizerJSON(p)
		require.ErrorContains(t, err, p)
		_, err = Load(p)
		require.ErrorContains(t, err, p)
	})
}
