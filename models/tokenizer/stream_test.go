package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestStreamChunks feeds ids one at a time and checks each returned chunk.
func TestStreamChunks(t *testing.T) {
	spm := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	gpt2 := loadShared(t, "tokenizer", "ggml-vocab-gpt-2.gguf")
	for _, c := range []struct {
		name  string
		tok   *Tokenizer
		ids   []int
		want  []string // one chunk per id
		flush string
	}{
		// "▁" (the prefix's space, stripped), then 🦙 as four byte tokens: held until complete.
		{"spm byte fallback", spm, []int{29871, 243, 162, 169, 156}, []string{"", "", "", "", "🦙"}, ""},
		{"spm words", spm, []int{1, 15043, 3186, 2}, []string{"", " Hello", " world", ""}, ""},
		{"spm first token stripped", spm, []int{15043, 3186}, []string{"Hello", " world"}, ""},
		// A character cut short, then a new one: the cut bytes become one U+FFFD each when the
		// next byte shows they can never complete.
		{"spm broken sequence", spm, []int{243, 162, 15043}, []string{"", "", "\uFFFD\uFFFD Hello"}, ""},
		{"spm invalid byte", spm, []int{3 + 0xff, 15043}, []string{"\uFFFD", " Hello"}, ""},
		{"spm cut at the end", spm, []int{15043, 243, 162}, []string{"Hello", "", ""}, "\uFFFD"},
		// " 🦙" in GPT-2 is "ĠðŁ" (12520), "¦" (99), "Ļ" (247): bytes 20 F0 9F | A6 | 99.
		{"gpt2 split bytes", gpt2, []int{12520, 99, 247, 13}, []string{" ", "", "🦙", "."}, ""},
		{"gpt2 endoftext", gpt2, []int{15496, 50256, 995}, []string{"Hello", "", " world"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := c.tok.NewStream()
			for i, id := range c.ids {
				got := st.Add(id)
				require.True(t, utf8.ValidString(got), "chunk %q", got)
				require.Equal(t, c.want[i], got, "after id %d (#%d)", id, i)
			}
			require.Equal(t, c.flush, st.Flush())
			require.Equal(t, "", st.Flush(), "a second Flush has nothing left")
			require.NoError(t, st.Err())
		})
	}
}

// TestStreamOutOfRange: an id outside the vocabulary adds nothing, Err names it, and the
// stream goes on.
func TestStreamOutOfRange(t *testing.T) {
	spm := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	st := spm.NewStream()
	require.Equal(t, "Hello", st.Add(15043))
	require.Equal(t, "", st.Add(32000))
	require.Equal(t, "", st.Add(-7))
	require.Equal(t, " world", st.Add(3186))
	require.ErrorContains(t, st.Err(), "token id 32000 ")
}

// TestStreamMatchesDecode: for every prefix of a mixed sequence, the chunks so far plus
// Flush are valid UTF-8, and over the whole sequence they equal Decode.
func TestStreamMatchesDecode(t *testing.T) {
	for _, file := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"} {
		tok := loadShared(t, "tokenizer", file)
		text := "Hello 🦙 wörld 😶‍🌫️ 我想在apple工作 ✅\n\tdone"
		ids, err := tok.Encode(text, true)
		require.NoError(t, err)
		want, err := tok.Decode(ids)
		require.NoError(t, err)
		st := tok.NewStream()
		var b strings.Builder
		for _, id := range ids {
			chunk := st.Add(id)
			require.True(t, utf8.ValidString(chunk), "%s: chunk %q", file, chunk)
			b.WriteString(chunk)
		}
		require.Empty(t, st.Flush())
		require.Equal(t, want, b.String(), file)
	}
}
