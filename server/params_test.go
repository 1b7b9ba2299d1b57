package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/engine"
)

// choiceOut is one choice of an answer as a client assembles it, streamed or not.
type choiceOut struct {
	Text, Finish string
	// Logprobs are the choice's logprobs objects: the whole one, or one per chunk.
	Logprobs []map[string]any
}

// answer posts req to path (a completions or chat completions endpoint), streamed when
// req["stream"] is true, and returns the choices by index as a client (the OpenAI SDK)
// assembles them: chunk texts or deltas appended in order.
func answer(t *testing.T, ts *testServer, path string, req map[string]any) map[int]*choiceOut {
	t.Helper()
	chat := path == "/v1/chat/completions"
	out := map[int]*choiceOut{}
	add := func(c map[string]any) {
		i := int(c["index"].(float64))
		if out[i] == nil {
			out[i] = &choiceOut{}
		}
		o := out[i]
		switch {
		case !chat:
			o.Text += c["text"].(string)
		case c["message"] != nil:
			o.Text += c["message"].(map[string]any)["content"].(string)
		default:
			if s, ok := c["delta"].(map[string]any)["content"].(string); ok {
				o.Text += s
			}
		}
		if f, ok := c["finish_reason"].(string); ok {
			require.Empty(t, o.Finish, "one finish reason per choice")
			o.Finish = f
		}
		if lp, ok := c["logprobs"].(map[string]any); ok {
			o.Logprobs = append(o.Logprobs, lp)
		}
	}
	if stream, _ := req["stream"].(bool); !stream {
		resp, body := ts.post(t, path, req)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		for _, c := range decode(t, string(body))["choices"].([]any) {
			add(c.(map[string]any))
		}
		return out
	}
	resp := ts.open(t, path, req)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, _ := events(t, resp.Body)
	require.Equal(t, "[DONE]", data[len(data)-1])
	for _, d := range data[:len(data)-1] {
		for _, c := range decode(t, d)["choices"].([]any) {
			add(c.(map[string]any))
		}
	}
	for i, o := range out {
		require.NotEmpty(t, o.Finish, "choice %d ends with a finish reason", i)
	}
	return out
}

// TestSamplingParameters: every logit adjustment and end-of-output option reaches the
// engine as the engine.Request it means, on both endpoints, streamed and not.
func TestSamplingParameters(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, e)
	greedy := generate(t, e, engine.Request{Prompt: prompt, MaxTokens: 12})
	first, stopAt := greedy.OutputIDs[0], "Bu"
	require.Contains(t, greedy.Text, stopAt)
	cases := []struct {
		name   string
		fields map[string]any
		want   engine.Request
	}{
		{"presence and frequency penalty", map[string]any{"presence_penalty": 1.5, "frequency_penalty": 0.7},
			engine.Request{Sampling: engine.Sampling{PresencePenalty: 1.5, FrequencyPenalty: 0.7}}},
		{"repetition penalty", map[string]any{"repetition_penalty": 2.5}, engine.Request{Sampling: engine.Sampling{RepetitionPenalty: 2.5}}},
		{"logit bias", map[string]any{"logit_bias": map[string]any{"7": 100, "12": -50.5}},
			engine.Request{Sampling: engine.Sampling{LogitBias: map[int32]float32{7: 100, 12: -50.5}}}},
		{"seeded sampling with penalties", map[string]any{"temperature": 1.2, "seed": 11, "frequency_penalty": -1, "logit_bias": map[string]any{"3": 4}},
			engine.Request{Sampling: engine.Sampling{Temperature: 1.2, Seed: 11, FrequencyPenalty: -1, LogitBias: map[int32]float32{3: 4}}}},
		{"stop token ids", map[string]any{"stop_token_ids": []int32{greedy.OutputIDs[4]}}, engine.Request{StopTokenIDs: []int32{greedy.OutputIDs[4]}}},
		{"min tokens", map[string]any{"stop_token_ids": []int32{first}, "min_tokens": 5},
			engine.Request{StopTokenIDs: []int32{first}, Sampling: engine.Sampling{MinTokens: 5}}},
		{"ignore eos", map[string]any{"ignore_eos": true}, engine.Request{IgnoreEOS: true}},
		{"stop string included", map[string]any{"stop": stopAt, "include_stop_str_in_output": true},
			engine.Request{Stop: []string{stopAt}, IncludeStop: true}},
	}
	for _, tc := range cases {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			for _, stream := range []bool{false, true} {
				t.Run(tc.name+path+map[bool]string{true: " streamed"}[stream], func(t *testing.T) {
					want := tc.want
					want.Prompt, want.MaxTokens = prompt, 12
					req := map[string]any{"max_tokens": 12, "temperature": 0, "stream": stream}
					if path == "/v1/chat/completions" {
						req["messages"], want.Prompt = chatMessages, chatPrompt
					} else {
						req["prompt"] = prompt
					}
					for k, v := range tc.fields {
						req[k] = v
					}
					res := generate(t, e, want)
					got := answer(t, ts, path, req)
					require.Len(t, got, 1)
					require.Equal(t, res.Text, got[0].Text)
					require.Equal(t, res.FinishReason, got[0].Finish)
				})
			}
		}
	}
	// The parameters do what they say (the engine's tests check them in detail).
	sevens, err := e.Tokenizer().Decode([]int{7, 7, 7})
	require.NoError(t, err)
	require.Equal(t, sevens, answer(t, ts, "/v1/completions",
		map[string]any{"prompt": prompt, "max_tokens": 3, "logit_bias": map[string]any{"7": 100}})[0].Text)
	require.True(t, strings.HasSuffix(answer(t, ts, "/v1/completions",
		map[string]any{"prompt": prompt, "max_tokens": 12, "temperature": 0, "stop": stopAt, "include_stop_str_in_output": true})[0].Text, stopAt))
}

// TestSamplingParametersRefused: out-of-range values are a 400 naming the field.
func TestSamplingParametersRefused(t *testing.T) {
	ts := start(t, Config{}, newEngine(t))
	for field, c := range map[string]struct{ value, msg string }{
		"presence_penalty":   {`2.5`, "presence_penalty must be in [-2, 2], got 2.5"},
		"frequency_penalty":  {`-3`, "frequency_penalty must be in [-2, 2]"},
		"repetition_penalty": {`0`, "repetition_penalty must be in (0, 1e6], got 0"},
		"logit_bias":         {`{"512": 1}`, "logit_bias names token 512, outside the vocabulary of 512"},
		"min_tokens":         {`-1`, "min_tokens must be at least 0"},
		"stop_token_ids":     {`[99999]`, "stop_token_ids names token 99999, outside the vocabulary of 512"},
		"stop":               {`[` + strings.Repeat(`"x",`, engine.MaxStopStrings) + `"x"]`, "stop holds 257 strings; at most 256 are allowed"},
	} {
		resp, body := ts.post(t, "/v1/completions", `{"prompt": "Hi", "max_tokens": 1, "`+field+`": `+c.value+`}`)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", field, body)
		require.Contains(t, string(body), `"param":"`+field+`"`, field)
		require.Contains(t, string(body), c.msg, field)
	}
	for body, msg := range map[string]string{
		`{"prompt": "Hi", "logit_bias": {"x": 1}}`:           `logit_bias keys must be token ids, got \"x\"`,
		`{"prompt": "Hi", "logit_bias": {"5": 101}}`:         "logit_bias of token 5 must be in [-100, 100], got 101",
		`{"prompt": "Hi", "max_tokens": 2, "min_tokens": 3}`: "min_tokens must be at most max_tokens (2), got 3",
	} {
		resp, got := ts.post(t, "/v1/completions", body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", got)
		require.Contains(t, string(got), msg)
	}
	resp, body := ts.post(t, "/v1/completions", `{"prompt": "Hi", "max_tokens": 1, "logit_bias": {}, "response_format": {"type": "text"}, "repetition_penalty": 1, "ignore_eos": false}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	tooLong := strings.Repeat("é", engine.MaxStopStringBytes/2) + "b"
	resp, body = ts.post(t, "/v1/completions", `{"prompt": "Hi", "stop": ["a", "`+tooLong+`"]}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), "stop string 1 is 257 bytes long; at most 256 bytes (UTF-8) are allowed")
	atLimits := `"` + strings.Repeat("é", engine.MaxStopStringBytes/2) + `",`
	resp, body = ts.post(t, "/v1/completions", `{"prompt": "Hi", "max_tokens": 1, "stop": [`+strings.Repeat(atLimits, engine.MaxStopStrings-1)+`"x"]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "stop strings at the limits: %s", body)
}

// TestUnimplementedRefused: a field this server does not implement, set to anything but
// null or its default, is a 400 naming it; its defaults pass.
func TestUnimplementedRefused(t *testing.T) {
	ts := start(t, Config{}, newEngine(t))
	const chat, cmpl = "/v1/chat/completions", "/v1/completions"
	user := `"messages":[{"role":"user","content":"Hi"}]`
	for _, c := range []struct{ path, field, value string }{
		{cmpl, "response_format", `{"type":"json_object"}`},
		{chat, "response_format", `{"type":"json_schema","json_schema":{}}`},
		{cmpl, "min_p", `0.1`},
		{cmpl, "use_beam_search", `true`},
		{cmpl, "guided_json", `{}`},
		{cmpl, "prompt_logprobs", `1`},
		{cmpl, "skip_special_tokens", `false`},
		{chat, "tools", `[{"type":"function","function":{"name":"f"}}]`},
		{chat, "tool_choice", `"required"`},
		{chat, "functions", `[{"name":"f"}]`},
		{chat, "modalities", `["text","audio"]`},
		{chat, "echo", `true`},
		{chat, "continue_final_message", `true`},
	} {
		body := `{"prompt":"Hi","max_tokens":1,"` + c.field + `":` + c.value + `}`
		if c.path == chat {
			body = `{` + user + `,"max_tokens":1,"` + c.field + `":` + c.value + `}`
		}
		resp, got := ts.post(t, c.path, body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", c.field, got)
		require.Contains(t, string(got), `"param":"`+c.field+`"`)
		require.Contains(t, string(got), "unsupported_parameter")
	}
	for path, body := range map[string]string{
		cmpl: `{"prompt":"Hi","max_tokens":1,"response_format":{"type":"text"},"min_p":0,"skip_special_tokens":true,"guided_json":null,"user":"u"}`,
		chat: `{` + user + `,"max_tokens":1,"tools":[],"tool_choice":"none","modalities":["text"],"echo":false,"metadata":{"a":"b"}}`,
	} {
		resp, got := ts.post(t, path, body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
	}
}
