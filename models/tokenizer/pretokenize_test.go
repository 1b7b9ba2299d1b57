package tokenizer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// splitGPT2 splits text with GPT-2's pre-tokenizer.
func splitGPT2(text string) []string {
	words, _ := gpt2PreTokenizer.split(text) // hand-written stages do not fail
	if words == nil {
		words = []string{}
	}
	return words
}

// TestSplitGPT2 checks the hand-written GPT-2 regex on the cases where it is easy to get
// wrong: contractions, the optional leading space, and \s+(?!\S).
func TestSplitGPT2(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"Hello world", []string{"Hello", " world"}},
		{"  Hello", []string{" ", " Hello"}},
		{"a   b", []string{"a", "  ", " b"}},
		{"x  ", []string{"x", "  "}}, // trailing spaces: \s+ at the end takes all
		{"a \n", []string{"a", " \n"}},
		{"a\n b", []string{"a", "\n", " b"}}, // \s+(?!\S) leaves the space for " b"
		{"\n\n\n", []string{"\n\n\n"}},
		{"I've 'RE we'll", []string{"I", "'ve", " '", "RE", " we", "'ll"}}, // contractions are case-sensitive
		{"'s'd", []string{"'s", "'d"}},
		{"3..3 333", []string{"3", "..", "3", " 333"}},
		{" ( ", []string{" (", " "}},
		{"¡¿ ½x", []string{"¡¿", " ½", "x"}}, // ½ is \p{N} (No)
		{"нещо на", []string{"нещо", " на"}},
		{"😶\u200d🌫️", []string{"😶\u200d🌫️"}},           // symbols and joiners are one run of "other"
		{"a\xff\xfeb", []string{"a", "\xff\xfe", "b"}}, // invalid bytes are "other"
		{"\t\t x", []string{"\t\t", " x"}},
		{"\u3000x", []string{"\u3000", "x"}}, // U+3000 is \s
	} {
		got := splitGPT2(c.in)
		require.Equal(t, c.want, got, "%q", c.in)
	}
}

// FuzzSplitGPT2: pre-tokens are never empty and concatenate to the input.
func FuzzSplitGPT2(f *testing.F) {
	for _, s := range []string{"Hello world", "a   b\n\n c", "I've 'RE", "\xff 3.3 ½"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := splitGPT2(s)
		for _, w := range words {
			if w == "" {
				t.Fatalf("empty pre-token in %q", s)
			}
		}
		if got := strings.Join(words, ""); got != s {
			t.Fatalf("pre-tokens of %q join to %q", s, got)
		}
	})
}
