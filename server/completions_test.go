package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/engine"
)

const prompt = "Hello my name is"

// TestCompletions checks non-streamed completions against engine.Generate for the same
// greedy request, for every form the prompt may take, and the exact body.
func TestCompletions(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, e)
	want := generate(t, e, engine.Request{Prompt: prompt, MaxTokens: 12})
	require.Len(t, want.OutputIDs, 12)

	ids := make([]any, len(want.PromptIDs))
	for i, id := range want.PromptIDs {
		ids[i] = id
	}
	for name, p := range map[string]any{"string": prompt, "one string": []any{prompt}, "token ids": ids, "one array of ids": []any{ids}} {
		t.Run(name, func(t *testing.T) {
			resp, body := ts.post(t, "/v1/completions", map[string]any{"model": "tiny", "prompt": p, "max_tokens": 12, "temperature": 0})
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			got := decode(t, string(body))
			require.True(t, strings.HasPrefix(got["id"].(string), "cmpl-"))
			require.Equal(t, "text_completion", got["object"])
			require.Equal(t, "tiny", got["model"])
			require.Positive(t, got["created"])
			require.Equal(t, []any{map[string]any{"index": 0.0, "text": want.Text, "logprobs": nil, "finish_reason": "length"}}, got["choices"])
			require.Equal(t, map[string]any{"prompt_tokens": float64(len(want.PromptIDs)), "completion_tokens": 12.0, "total_tokens": float64(len(want.PromptIDs) + 12)}, got["usage"])
		})
	}
}

// TestCompletionsStream checks a streamed completion: its chunks add up to
// engine.Generate's text, the last choice carries the finish reason, the usage chunk comes
// when asked for, then [DONE].
func TestCompletionsStream(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, e)
	want := generate(t, e, engine.Request{Prompt: prompt, MaxTokens: 10, Stop: []string{"Bu"}})
	for _, withUsage := range []bool{false, true} {
		t.Run(fmt.Sprint("usage=", withUsage), func(t *testing.T) {
			req := map[string]any{"prompt": prompt, "max_tokens": 10, "temperature": 0, "stop": "Bu", "stream": true}
			if withUsage {
				req["stream_options"] = map[string]any{"include_usage": true}
			}
			resp := ts.open(t, "/v1/completions", req)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
			data, _ := events(t, resp.Body)
			require.Equal(t, "[DONE]", data[len(data)-1])
			data = data[:len(data)-1]
			if withUsage {
				last := decode(t, data[len(data)-1])
				require.Equal(t, []any{}, last["choices"])
				require.Equal(t, map[string]any{"prompt_tokens": float64(len(want.PromptIDs)), "completion_tokens": float64(len(want.OutputIDs)),
					"total_tokens": float64(len(want.PromptIDs) + len(want.OutputIDs))}, last["usage"])
				data = data[:len(data)-1]
			}
			var text strings.Builder
			id := ""
			for i, d := range data {
				c := decode(t, d)
				require.Equal(t, "text_completion", c["object"])
				if id == "" {
					id = c["id"].(string)
				}
				require.Equal(t, id, c["id"], "one id for the whole stream")
				usage, has := c["usage"]
				require.Equal(t, withUsage, has, "usage is null in every chunk when asked for, absent otherwise")
				require.Nil(t, usage)
				choice := c["choices"].([]any)[0].(map[string]any)
				text.WriteString(choice["text"].(string))
				if i < len(data)-1 {
					require.Nil(t, choice["finish_reason"])
					require.NotEmpty(t, choice["text"])
				} else {
					require.Equal(t, want.FinishReason, choice["finish_reason"])
					require.Equal(t, "", choice["text"])
				}
			}
			require.Equal(t, want.Text, text.String())
		})
	}
}

// TestConcurrentGreedy runs 16 greedy requests at once, half streamed, and requires each
// to equal the same request run alone.
func TestConcurrentGreedy(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, e)
	const n = 16
	alone := make([]string, n)
	for i := range n {
		alone[i] = generate(t, e, engine.Request{Prompt: fmt.Sprintf("%s %d", prompt, i), MaxTokens: 8}).Text
	}
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { // no require here: FailNow must run on the test's goroutine
			raw, _ := json.Marshal(map[string]any{"prompt": fmt.Sprintf("%s %d", prompt, i), "max_tokens": 8, "temperature": 0, "stream": i%2 == 1})
			resp, err := http.Post(ts.url+"/v1/completions", "application/json", bytes.NewReader(raw))
			if err != nil {
				bodies[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			bodies[i] = string(b)
		})
	}
	wg.Wait()
	got := make([]string, n)
	for i, body := range bodies {
		if i%2 == 0 {
			got[i] = decode(t, body)["choices"].([]any)[0].(map[string]any)["text"].(string)
			continue
		}
		data, _ := events(t, strings.NewReader(body))
		require.Equal(t, "[DONE]", data[len(data)-1])
		var b strings.Builder
		for _, d := range data[:len(data)-1] {
			b.WriteString(decode(t, d)["choices"].([]any)[0].(map[string]any)["text"].(string))
		}
		got[i] = b.String()
	}
	require.Equal(t, alone, got)
	require.Zero(t, e.Blocks().InUse())
}
