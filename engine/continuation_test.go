package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompletionContinuesThePrompt: the embedded stories260K (a SentencePiece vocabulary
// of llama2.c) continues "Lily and Ben" with " were playing in the park" (ids ▁we re ▁play
// ing ▁in ▁the ▁p ar k: 8 tokens end at "par"), its first token's space kept as llama.cpp's
// server and vLLM keep it, so prompt + completion is the text; the streamed chunks are the
// same text, and a completion that starts without a space ("Once upon a time" → ", there
// …") is unchanged.
func TestCompletionContinuesThePrompt(t *testing.T) {
	e, err := New(Config{Model: "stories260K", TP: 2})
	require.NoError(t, err)
	defer e.Close()
	for _, c := range []struct {
		prompt    string
		maxTokens int
		want      string
	}{
		{"Lily and Ben", 8, "Lily and Ben were playing in the par"},
		{"Lily and Ben", 9, "Lily and Ben were playing in the park"},
		{"Once upon a time", 8, "Once upon a time, there was a little girl"},
	} {
		var streamed strings.Builder
		res, err := e.Generate(context.Background(), Request{Prompt: c.prompt, MaxTokens: c.maxTokens}, func(tok Token) error {
			streamed.WriteString(tok.Text)
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, c.want, c.prompt+res.Text, "ids %v", res.OutputIDs)
		require.Equal(t, res.Text, streamed.String())
	}
}
