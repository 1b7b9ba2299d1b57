package tokenizer

import (
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSpecialTokens checks BOS, EOS, IsSpecial and the add-special defaults of both vocabs.
func TestSpecialTokens(t *testing.T) {
	spm := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	gpt2 := loadShared(t, "tokenizer", "ggml-vocab-gpt-2.gguf")
	for _, c := range []struct {
		name           string
		tok            *Tokenizer
		bos, eos       int
		addsBOS        bool
		special, plain []int
	}{
		{"llama-spm", spm, 1, 2, true, []int{0, 1, 2}, []int{3, 259, 15043, 31999, -1, 32000}},
		{"gpt-2", gpt2, 50256, 50256, false, []int{50256}, []int{0, 198, 50255, -1, 50257}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.bos, c.tok.BOS())
			require.Equal(t, c.eos, c.tok.EOS())
			require.Equal(t, c.addsBOS, c.tok.AddsBOS())
			for _, id := range c.special {
				require.True(t, c.tok.IsSpecial(id), "id %d", id)
				text, err := c.tok.Decode([]int{id})
				require.NoError(t, err)
				require.Empty(t, text, "special id %d decodes to nothing", id)
			}
			for _, id := range c.plain {
				require.False(t, c.tok.IsSpecial(id), "id %d", id)
			}
			ids, err := c.tok.Encode("", true)
			require.NoError(t, err)
			if c.addsBOS {
				require.Equal(t, []int{c.bos}, ids)
			} else {
				require.Empty(t, ids)
			}
		})
	}
	require.True(t, spm.IsControl(1))
	require.False(t, spm.IsControl(0), "<unk> is special but not a control token")
}

// TestEncodeDoesNotParseSpecialText: "<s>" in the text is plain text, not BOS.
func TestEncodeDoesNotParseSpecialText(t *testing.T) {
	spm := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	ids, err := spm.Encode("<s>", false)
	require.NoError(t, err)
	require.NotContains(t, ids, 1)
	text, err := spm.Decode(ids)
	require.NoError(t, err)
	require.Equal(t, "<s>", text)
}

// TestDecodeLeadingSpace pins llama.cpp's leading-space rule for SentencePiece: one space is
// stripped from the first token's piece only, whatever that token is.
func TestDecodeLeadingSpace(t *testing.T) {
	spm := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	for _, c := range []struct {
		ids  []int
		want string
	}{
		{[]int{15043}, "Hello"},                   // "▁Hello": the prefix's space goes
		{[]int{29871, 15043}, " Hello"},           // "▁" "▁Hello": the bare "▁" was the prefix
		{[]int{259, 15043}, "  Hello"},            // "▁▁" "▁Hello"
		{[]int{1, 15043}, " Hello"},               // BOS takes the first position: nothing stripped
		{[]int{15043, 2}, "Hello"},                // EOS decodes to nothing
		{[]int{0, 15043}, " Hello"},               // so does <unk>, also taking the first position
		{[]int{10994}, "Hello"},                   // "Hello" without "▁": nothing to strip
		{[]int{15043, 15043}, "Hello Hello"},      // only the first token
		{[]int{29871, 13, 15043}, "\n Hello"},     // "▁" "\n" "▁Hello"
		{[]int{3, 4}, "\x00\x01"},                 // byte tokens
		{[]int{243, 162, 169, 156}, "\U0001F999"}, // 🦙 from four byte tokens
		{[]int{243, 162}, "\xf0\x9f"},             // raw bytes, not valid UTF-8
		{[]int{}, ""},                             // nothing
	} {
		got, err := spm.Decode(c.ids)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "ids %v", c.ids)
	}
}

// TestOutOfRange: ids outside the vocabulary are errors naming the id, never panics.
func TestOutOfRange(t *testing.T) {
	spm := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	for _, id := range []int{-1, -100, 32000, 1 << 40} {
		_, err := spm.Decode([]int{15043, id})
		require.Error(t, err)
		require.Contains(t, err.Error(), "token id "+strconv.Itoa(id)+" ")
		require.Contains(t, err.Error(), "position 1")
		require.Equal(t, "", spm.Piece(id))
		require.Equal(t, TypeUndefined, spm.Type(id))
		require.False(t, spm.IsSpecial(id))
	}
}

// TestEncodeInvalidUTF8: bytes that are not UTF-8 still encode (SentencePiece byte fallback,
// byte-level BPE bytes) and decode back.
func TestEncodeInvalidUTF8(t *testing.T) {
	for _, file := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"} {
		tok := loadShared(t, "tokenizer", file)
		for _, s := range []string{"\xff", "a\xc3", "\xe2\x82 x", "\x80\x80abc"} {
			ids, err := tok.Encode(s, false)
			require.NoError(t, err, "%s %q", file, s)
			got, err := tok.Decode(ids)
			require.NoError(t, err)
			require.Equal(t, s, got, "%s %q", file, s)
		}
	}
	spm := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	ids, err := spm.Encode("\xff", false)
	require.NoError(t, err)
	require.Equal(t, []int{29871, 3 + 0xff}, ids) // "▁", <0xFF>
}

// TestUserDefinedTokens: user-defined tokens are split out of the text before SentencePiece,
// and the text after one gets the space prefix again (llama.cpp's is_prev_special).
func TestUserDefinedTokens(t *testing.T) {
	tok, err := FromGGUF(writeGGUF(t, "spm.gguf", spmKVs()...))
	require.NoError(t, err)
	for _, c := range []struct {
		text string
		want []int
	}{
		{"a", []int{262}},                          // "▁a"
		{"ab", []int{264}},                         // "▁ab"
		{"a<tool>b", []int{262, 265, 259, 261}},    // "▁a" <tool> "▁" "b"
		{"<tool>", []int{265}},                     // no prefix before a leading token
		{"<tool><tool>a", []int{265, 265, 262}},    // "▁a" after the token
		{"c", []int{259, 3 + 'c'}},                 // "▁", byte fallback
		{"a a", []int{262, 262}},                   // "▁a" "▁a"
		{"ba", []int{259, 261, 260}},               // "▁" "b" "a": no "▁b", "ba"
		{"\u00e9", []int{259, 3 + 0xc3, 3 + 0xa9}}, // é by bytes
	} {
		ids, err := tok.Encode(c.text, false)
		require.NoError(t, err)
		require.Equal(t, c.want, ids, "%q: %q", c.text, pieces(tok, ids))
	}
	text, err := tok.Decode([]int{262, 265, 259, 261})
	require.NoError(t, err)
	require.Equal(t, "a<tool> b", text, "decoding keeps the space the prefix added after the token, as llama.cpp")
}

// TestConcurrentEncode runs Encode from several goroutines on one Tokenizer (run with -race:
// the byte-level BPE merge cache is shared).
func TestConcurrentEncode(t *testing.T) {
	tok := loadShared(t, "tokenizer", "ggml-vocab-gpt-2.gguf")
	cases := loadSuite(t, "ggml-vocab-gpt-2.gguf")
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(cases))
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range cases {
				c := cases[(i+g)%len(cases)]
				got, err := tok.Encode(c.in, false)
				if err != nil || !equalInts(got, c.want) {
					errs <- c.in
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for in := range errs {
		t.Errorf("concurrent Encode(%q) differs from llama.cpp", in)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
