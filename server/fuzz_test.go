package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// fuzzBodies seed the request decoders' fuzz targets: valid bodies and the shapes
// TestBadRequests refuses.
var fuzzBodies = []string{
	``, `null`, `[]`, `"x"`, `{`, `{}`,
	`{"prompt": "Hello my name is", "max_tokens": 8, "temperature": 0, "stream": true, "stream_options": {"include_usage": true}}`,
	`{"prompt": [1, 2, 3], "stop": ["a", "b"], "top_p": 0.5, "top_k": 4, "seed": -3}`,
	`{"prompt": [[5, 6]], "n": 1, "best_of": 1, "logprobs": null, "logit_bias": {"5": 1}}`,
	`{"prompt": ["one"], "max_tokens": 1e400, "temperature": "hot", "echo": true, "suffix": "s"}`,
	`{"prompt": [null], "response_format": {"type": "json_object"}, "stop_token_ids": [1]}`,
	`{"model": "gpt-4", "prompt": 5, "max_tokens": 255}`,
	`{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "max_completion_tokens": 4}`,
	`{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}]}]}`,
	`{"messages": [{"role": "assistant", "content": null}, {"role": "robot"}], "tools": [{"type": "function"}]}`,
	`{"messages": "Hi", "max_completion_tokens": 0}`,
}

// FuzzDecodeCompletion: no /v1/completions body panics the decoder; a refused one is a
// 400 (404 for an unknown model) that names the field, and an accepted one has prompt ids
// inside the vocabulary that fit the context.
func FuzzDecodeCompletion(f *testing.F) {
	_, l := fuzzServer(f)
	for _, b := range fuzzBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, prompts, _, e := decodeCompletion(body, l)
		if e == nil {
			require.LessOrEqual(t, len(prompts)*p.n, maxChoices)
		}
		for _, ids := range prompts {
			checkDecoded(t, body, p, ids, e, l)
		}
		if len(prompts) == 0 {
			checkDecoded(t, body, p, nil, e, l)
		}
	})
}

// FuzzDecodeChat: the same for /v1/chat/completions, through the chat template.
func FuzzDecodeChat(f *testing.F) {
	s, l := fuzzServer(f)
	for _, b := range fuzzBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, ids, e := s.decodeChat(body, l)
		checkDecoded(t, body, p, ids, e, l)
	})
}

// fuzzServer is a server on the tiny preset, for its decoders only.
func fuzzServer(f *testing.F) (*Server, *loaded) {
	s, err := New(Config{})
	require.NoError(f, err)
	s.SetEngine(newEngine(f))
	return s, s.eng.Load()
}

// checkDecoded checks what a decoder made of body.
func checkDecoded(t *testing.T, body []byte, p params, ids []int32, e *apiError, l *loaded) {
	if e == nil {
		require.NotEmpty(t, ids)
		for _, id := range ids {
			require.True(t, id >= 0 && int(id) < l.e.Tokenizer().VocabSize(), "id %d", id)
		}
		require.Less(t, len(ids)+p.maxTokens, l.contextLen+1)
		return
	}
	require.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, e.Status, "%v", e)
	require.Equal(t, typeInvalidRequest, e.Type, "%v", e)
	require.NotEmpty(t, e.Message)
	if trimmed := bytes.TrimSpace(body); json.Valid(body) && len(trimmed) > 0 && trimmed[0] == '{' {
		require.NotEmpty(t, e.Param, "a refused JSON object names the field: %v", e)
	}
	_, err := json.Marshal(e.body())
	require.NoError(t, err)
}
