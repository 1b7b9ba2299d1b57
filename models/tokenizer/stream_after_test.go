package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// continuation streams rest after prefix through NewStreamAfter, one id at a time, and
// returns the chunks joined with what Flush holds.
func continuation(t *testing.T, tok *Tokenizer, prefix, rest []int) string {
	t.Helper()
	st := tok.NewStreamAfter(prefix)
	var b strings.Builder
	for _, id := range rest {
		chunk := st.Add(id)
		require.True(t, utf8.ValidString(chunk), "chunk %q after id %d", chunk, id)
		b.WriteString(chunk)
	}
	b.WriteString(st.Flush())
	require.NoError(t, st.Err())
	return b.String()
}

// withoutCutCharacter drops the bytes of a character that s leaves unfinished: what
// NewStreamAfter holds to emit whole with the id that completes it.
func withoutCutCharacter(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}

// TestStreamAfterContinuesDecode: for every case of llama.cpp's suites (SentencePiece and
// byte-level BPE) and every split of its ids into a prompt and a completion, the prompt's
// text and the completion streamed after it are the case's text: the completion's first
// token keeps its leading space, which only the start of a sequence strips.
func TestStreamAfterContinuesDecode(t *testing.T) {
	for _, s := range suites {
		t.Run(s.file, func(t *testing.T) {
			tok := loadShared(t, "tokenizer", s.file)
			for i, c := range loadSuite(t, s.file) {
				for k := 1; k < len(c.want); k++ {
					prompt, err := tok.Decode(c.want[:k])
					require.NoError(t, err)
					got := withoutCutCharacter(prompt) + continuation(t, tok, c.want[:k], c.want[k:])
					require.Equal(t, c.in, got, "case %d split after %d of %d ids", i, k, len(c.want))
				}
			}
		})
	}
}

// TestStreamAfterStories260K: the llama2.c vocabulary, over run.c's prompt (BOS first) and
// greedy ids: prompt text + the completion after any prefix is the reference story.
func TestStreamAfterStories260K(t *testing.T) {
	tok, err := FromLlama2C(stories260KTokenizer(t))
	require.NoError(t, err)
	prompt := parseIDs(t, stories260KPromptIDs)
	ids := append(prompt, parseIDs(t, stories260KGreedyIDs)...)
	require.Equal(t, stories260KText, stories260KPrompt+continuation(t, tok, prompt, ids[len(prompt):]))
	for k := 2; k < len(ids); k++ { // prompts of BOS and at least one more id
		head, err := tok.Decode(ids[1:k]) // the prompt's text, Encode's input: Decode without BOS
		require.NoError(t, err)
		require.Equal(t, stories260KText, head+continuation(t, tok, ids[:k], ids[k:]), "split after %d ids", k)
	}
}

// TestStreamAfterChunks: what a continuation's first ids give, where a fresh stream differs.
func TestStreamAfterChunks(t *testing.T) {
	spm := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	gpt2 := loadShared(t, "tokenizer", "ggml-vocab-gpt-2.gguf")
	for _, c := range []struct {
		name   string
		tok    *Tokenizer
		prefix []int
		ids    []int
		want   []string // one chunk per id
	}{
		{"spm continuation keeps its space", spm, []int{1, 15043}, []int{3186}, []string{" world"}},
		{"spm continuation of a bare token", spm, []int{15043}, []int{3186}, []string{" world"}},
		{"spm empty prefix strips as NewStream", spm, nil, []int{15043, 3186}, []string{"Hello", " world"}},
		// "▁" then 🦙's bytes F0 9F | A6 9F: the prompt's cut character comes out whole.
		{"spm character cut by the prompt", spm, []int{29871, 243, 162}, []int{169, 156}, []string{"", "🦙"}},
		{"gpt2 continuation", gpt2, []int{15496}, []int{995}, []string{" world"}},
		{"gpt2 character cut by the prompt", gpt2, []int{12520}, []int{99, 247}, []string{"", "🦙"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := c.tok.NewStreamAfter(c.prefix)
			for i, id := range c.ids {
				require.Equal(t, c.want[i], st.Add(id), "after id %d (#%d)", id, i)
			}
			require.Equal(t, "", st.Flush())
			require.NoError(t, st.Err())
		})
	}
}

// TestStreamAfterBadPrefix: an out-of-range prompt id is Err's, and the stream goes on.
func TestStreamAfterBadPrefix(t *testing.T) {
	spm := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	st := spm.NewStreamAfter([]int{15043, 32000})
	require.Equal(t, " world", st.Add(3186))
	require.ErrorContains(t, st.Err(), "token id 32000 ")
}
