package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompletionKeepsLeadingSpace: on the embedded stories260K (SentencePiece), "Lily and
// Ben" continues with " were playing in the park", as llama.cpp's server and vLLM answer:
// prompt + completion is the text, whole or streamed (the first chunk is " we"), and echo
// gives exactly that text.
func TestCompletionKeepsLeadingSpace(t *testing.T) {
	ts := start(t, Config{}, newModel(t, "stories260K"))
	const prompt, completion = "Lily and Ben", " were playing in the park"
	for _, stream := range []bool{false, true} {
		for _, echo := range []bool{false, true} {
			t.Run(fmt.Sprintf("stream=%v echo=%v", stream, echo), func(t *testing.T) {
				got := answer(t, ts, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 9, "temperature": 0,
					"stream": stream, "echo": echo})
				want := completion
				if echo {
					want = prompt + completion
				}
				require.Equal(t, want, got[0].Text)
			})
		}
	}
	resp := ts.open(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 2, "temperature": 0, "stream": true})
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, _ := events(t, resp.Body)
	first := decode(t, data[0])["choices"].([]any)[0].(map[string]any)
	require.Equal(t, " we", first["text"], "the first chunk keeps the space")
}
