package server

import (
	"fmt"
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/engine"
)

// TestLogprobs: chat's logprobs.content and the completions' tokens, token_logprobs,
// top_logprobs and text_offset carry the engine's logprobs (which its tests check against
// a f64 log-softmax of the full logits) in OpenAI's shapes, streamed (a chunk's tokens with
// its text) and not, for every choice of n, at TP 1 and 8.
func TestLogprobs(t *testing.T) {
	for _, tp := range []int{1, 8} {
		e, err := engine.New(engine.Config{Model: "tiny", TP: tp})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, e.Close()) })
		ts := start(t, Config{}, e)
		tok := e.Tokenizer()
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("tp=%d stream=%v", tp, stream), func(t *testing.T) {
				sampling := engine.Sampling{Temperature: 1, Seed: 4}
				// chat: logprobs true, top_logprobs 3, two choices
				got := answer(t, ts, "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 6, "temperature": 1, "seed": 4,
					"n": 2, "logprobs": true, "top_logprobs": 3, "stream": stream})
				require.Len(t, got, 2)
				for i := range 2 {
					s := sampling
					s.Seed += uint64(i)
					want := generate(t, e, engine.Request{Prompt: chatPrompt, MaxTokens: 6, Sampling: s, Logprobs: true, TopLogprobs: 3})
					var content []any
					for _, lp := range got[i].Logprobs {
						require.Contains(t, lp, "refusal")
						content = append(content, lp["content"].([]any)...)
					}
					require.Len(t, content, len(want.Logprobs))
					for k, c := range content {
						w := want.Logprobs[k]
						text := tok.TokenText(int(w.ID))
						entry := c.(map[string]any)
						require.Equal(t, w.Logprob, entry["logprob"])
						require.Equal(t, jsonString(text), entry["token"])
						require.Len(t, entry["bytes"], len(text))
						for b, v := range entry["bytes"].([]any) {
							require.Equal(t, float64(text[b]), v)
						}
						tops := entry["top_logprobs"].([]any)
						require.Len(t, tops, 3)
						for j, top := range tops {
							require.Equal(t, w.Top[j].Logprob, top.(map[string]any)["logprob"])
							require.Equal(t, jsonString(tok.TokenText(int(w.Top[j].ID))), top.(map[string]any)["token"])
						}
					}
				}

				// completions: logprobs 2
				want := generate(t, e, engine.Request{Prompt: prompt, MaxTokens: 8, Logprobs: true, TopLogprobs: 2})
				c := answer(t, ts, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 8, "temperature": 0, "logprobs": 2, "stream": stream})[0]
				var tokens, offsets, lps []any
				var tops []any
				for _, lp := range c.Logprobs {
					tokens = append(tokens, lp["tokens"].([]any)...)
					lps = append(lps, lp["token_logprobs"].([]any)...)
					tops = append(tops, lp["top_logprobs"].([]any)...)
					offsets = append(offsets, lp["text_offset"].([]any)...)
				}
				require.Len(t, tokens, len(want.Logprobs))
				offset := 0
				for k, w := range want.Logprobs {
					text := tok.TokenText(int(w.ID))
					require.Equal(t, jsonString(text), tokens[k])
					require.Equal(t, w.Logprob, lps[k])
					require.Equal(t, float64(offset), offsets[k])
					offset += len(text)
					top := tops[k].(map[string]any)
					require.Equal(t, w.Top[0].ID, w.ID, "greedy: the sampled token is the top one")
					for _, wt := range w.Top {
						if text := tok.TokenText(int(wt.ID)); utf8.ValidString(text) { // invalid ones may share a key: U+FFFD
							require.Equal(t, wt.Logprob, top[text])
						}
					}
					require.LessOrEqual(t, len(top), 3)
				}
				require.Equal(t, want.Text, c.Text)
			})
		}
	}
	ts := start(t, Config{}, newEngine(t))
	require.Nil(t, answer(t, ts, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 2, "logprobs": false})[0].Logprobs,
		"no logprobs unless asked for")
	require.Nil(t, answer(t, ts, "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 2, "top_logprobs": 0})[0].Logprobs)
}

// jsonString is s as it comes back from JSON: invalid UTF-8 replaced by U+FFFD.
func jsonString(s string) string { return string([]rune(s)) }

func TestLogprobsRefused(t *testing.T) {
	ts := start(t, Config{}, newEngine(t))
	for _, c := range []struct{ path, body, param, msg string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"logprobs":"yes"}`, "logprobs", "logprobs must be a boolean"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"logprobs":true,"top_logprobs":21}`, "top_logprobs", "top_logprobs must be in [0, 20], got 21"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"logprobs":false,"top_logprobs":2}`, "top_logprobs", "requires logprobs to be true"},
		{"/v1/completions", `{"prompt":"Hi","logprobs":6}`, "logprobs", "logprobs must be an integer in [0, 5], got 6"},
		{"/v1/completions", `{"prompt":"Hi","logprobs":true}`, "logprobs", "logprobs must be an integer"},
		{"/v1/completions", `{"prompt":"Hi","top_logprobs":2}`, "top_logprobs", "chat completions parameter"},
		{"/v1/completions", `{"prompt":"Hi","logprobs":1,"echo":true}`, "echo", "echo with logprobs"},
	} {
		resp, body := ts.post(t, c.path, c.body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
		require.Contains(t, string(body), `"param":"`+c.param+`"`, c.body)
		require.Contains(t, string(body), c.msg, c.body)
	}
}
