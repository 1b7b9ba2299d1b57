package tokenizer

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// suites are llama.cpp's tokenizer test suites (models/ggml-vocab-*.gguf.{inp,out}).
var suites = []struct {
	file string
	kind Kind
	size int
}{
	{"ggml-vocab-llama-spm.gguf", SentencePiece, 32000},
	{"ggml-vocab-gpt-2.gguf", ByteLevelBPE, 50257},
	{"ggml-vocab-llama-bpe.gguf", ByteLevelBPE, 128256},
	{"ggml-vocab-deepseek-llm.gguf", ByteLevelBPE, 102400},
	{"ggml-vocab-starcoder.gguf", ByteLevelBPE, 49152},
	{"ggml-vocab-falcon.gguf", ByteLevelBPE, 65024},
}

// TestSuiteEncode requires llama.cpp's ids for every case, encoded without special tokens.
func TestSuiteEncode(t *testing.T) {
	for _, s := range suites {
		t.Run(s.file, func(t *testing.T) {
			tok := loadShared(t, "tokenizer", s.file)
			require.Equal(t, s.kind, tok.Kind())
			require.Equal(t, s.size, tok.VocabSize())
			cases := loadSuite(t, s.file)
			require.Len(t, cases, 46)
			for i, c := range cases {
				got, err := tok.Encode(c.in, false)
				require.NoError(t, err, "case %d %q", i, c.in)
				require.Equal(t, c.want, got, "case %d %q: pieces %q", i, c.in, pieces(tok, got))
			}
		})
	}
}

// TestSuiteDecode requires that decoding each expected id list gives the input back.
//
// For the SentencePiece vocab this is llama.cpp's decoding (llama_detokenize with
// remove_special false): encoding prefixed the text with a space, which became the leading
// "▁" of the first token, and decoding strips exactly one leading space from the first
// token's piece. Every case round-trips, including those that start with spaces (" Hello",
// "   "): their first token is a bare "▁" (29871) or "▁▁…" whose first space is the
// prefix's. The rule only loses text when the ids do not come from Encode's prefix, which
// TestDecodeLeadingSpace covers.
func TestSuiteDecode(t *testing.T) {
	for _, s := range suites {
		t.Run(s.file, func(t *testing.T) {
			tok := loadShared(t, "tokenizer", s.file)
			for i, c := range loadSuite(t, s.file) {
				got, err := tok.Decode(c.want)
				require.NoError(t, err)
				require.Equal(t, c.in, got, "case %d", i)
			}
		})
	}
}

// TestSuiteStream feeds every case's ids one at a time: the chunks are valid UTF-8 and
// concatenate to Decode's text.
func TestSuiteStream(t *testing.T) {
	for _, s := range suites {
		t.Run(s.file, func(t *testing.T) {
			tok := loadShared(t, "tokenizer", s.file)
			for i, c := range loadSuite(t, s.file) {
				want, err := tok.Decode(c.want)
				require.NoError(t, err)
				st := tok.NewStream()
				var b strings.Builder
				for _, id := range c.want {
					chunk := st.Add(id)
					require.True(t, utf8.ValidString(chunk), "case %d: chunk %q after id %d", i, chunk, id)
					b.WriteString(chunk)
				}
				require.Empty(t, st.Flush(), "case %d: nothing left over", i)
				require.NoError(t, st.Err())
				require.Equal(t, want, b.String(), "case %d", i)
			}
		})
	}
}

// TestSuiteEncodeSpeed: encoding the whole SentencePiece suite takes well under a second
// (about a millisecond; BenchmarkEncode measures it).
func TestSuiteEncodeSpeed(t *testing.T) {
	tok := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	cases := loadSuite(t, "ggml-vocab-llama-spm.gguf")
	start := time.Now()
	for _, c := range cases {
		_, err := tok.Encode(c.in, false)
		require.NoError(t, err)
	}
	elapsed := time.Since(start)
	t.Logf("llama-spm suite (%d cases) encoded in %v", len(cases), elapsed)
	require.Less(t, elapsed, 200*time.Millisecond)
}

func pieces(tok *Tokenizer, ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%d:%s", id, tok.Piece(id))
	}
	return out
}
