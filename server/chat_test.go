package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/engine"
)

// The plain template's rendering of chatMessages.
const chatPrompt = "system: Be brief.\nuser: Hello my name is\nassistant:"

var chatMessages = []any{
	map[string]any{"role": "system", "content": "Be brief."},
	map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Hello my name is"}}},
}

// TestChatCompletions checks a non-streamed chat completion against engine.Generate on the
// conversation rendered by the plain template, and the exact body.
func TestChatCompletions(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, e)
	want := generate(t, e, engine.Request{Prompt: chatPrompt, MaxTokens: 9})

	resp, body := ts.post(t, "/v1/chat/completions", map[string]any{"model": "tiny", "messages": chatMessages, "max_completion_tokens": 9, "temperature": 0})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	got := decode(t, string(body))
	require.True(t, strings.HasPrefix(got["id"].(string), "chatcmpl-"))
	require.Equal(t, "chat.completion", got["object"])
	require.Equal(t, "tiny", got["model"])
	require.Equal(t, []any{map[string]any{"index": 0.0, "message": map[string]any{"role": "assistant", "content": want.Text},
		"logprobs": nil, "finish_reason": "length"}}, got["choices"])
	require.Equal(t, map[string]any{"prompt_tokens": float64(len(want.PromptIDs)), "completion_tokens": 9.0,
		"total_tokens": float64(len(want.PromptIDs) + 9)}, got["usage"])
}

// TestChatCompletionsStream checks the chunks of a streamed chat completion: the role
// first, then content deltas adding up to engine.Generate's text, an empty delta with the
// finish reason, the usage, [DONE].
func TestChatCompletionsStream(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, e)
	want := generate(t, e, engine.Request{Prompt: chatPrompt, MaxTokens: 7})

	resp := ts.open(t, "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 7, "temperature": 0,
		"stream": true, "stream_options": map[string]any{"include_usage": true}})
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, _ := events(t, resp.Body)
	require.GreaterOrEqual(t, len(data), 4)
	require.Equal(t, "[DONE]", data[len(data)-1])

	first := decode(t, data[0])
	require.Equal(t, "chat.completion.chunk", first["object"])
	require.Equal(t, []any{map[string]any{"index": 0.0, "delta": map[string]any{"role": "assistant", "content": ""},
		"logprobs": nil, "finish_reason": nil}}, first["choices"])

	usage := decode(t, data[len(data)-2])
	require.Equal(t, []any{}, usage["choices"])
	require.Equal(t, map[string]any{"prompt_tokens": float64(len(want.PromptIDs)), "completion_tokens": 7.0,
		"total_tokens": float64(len(want.PromptIDs) + 7)}, usage["usage"])

	last := decode(t, data[len(data)-3])
	require.Equal(t, []any{map[string]any{"index": 0.0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": "length"}}, last["choices"])

	var text strings.Builder
	for _, d := range data[1 : len(data)-3] {
		c := decode(t, d)
		require.Equal(t, first["id"], c["id"])
		delta := c["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
		require.NotContains(t, delta, "role")
		text.WriteString(delta["content"].(string))
	}
	require.Equal(t, want.Text, text.String())
}
