package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadRequests sends wrong requests and requires OpenAI's error body with the exact
// status, type, param and code.
func TestBadRequests(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, e)
	long := strings.Repeat("Hello ", 300) // over the tiny preset's 256-token context
	const (
		cmpl  = "/v1/completions"
		chat  = "/v1/chat/completions"
		bad   = "invalid_request_error"
		unsup = "unsupported_parameter"
		ctxEx = "context_length_exceeded"
	)
	user := `"messages":[{"role":"user","content":"Hi"}]`
	cases := []struct {
		name, path, body       string
		status                 int
		typ, param, code, text string
	}{
		{"malformed JSON", cmpl, `{"prompt": "Hi",`, 400, bad, "", "", "not valid JSON"},
		{"not an object", cmpl, `["Hi"]`, 400, bad, "", "", "must be a JSON object"},
		{"empty body", cmpl, ``, 400, bad, "", "", "not valid JSON"},
		{"temperature a string", cmpl, `{"prompt":"Hi","temperature":"hot"}`, 400, bad, "temperature", "", "temperature must be a number, got string"},
		{"max_tokens a fraction", cmpl, `{"prompt":"Hi","max_tokens":1.5}`, 400, bad, "max_tokens", "", "max_tokens must be an integer"},
		{"stream a string", cmpl, `{"prompt":"Hi","stream":"yes"}`, 400, bad, "stream", "", "stream must be a boolean"},
		{"max_tokens 0", cmpl, `{"prompt":"Hi","max_tokens":0}`, 400, bad, "max_tokens", "", "max_tokens must be at least 1, got 0"},
		{"temperature 3", cmpl, `{"prompt":"Hi","temperature":3}`, 400, bad, "temperature", "", "temperature must be in [0, 2], got 3"},
		{"temperature negative", cmpl, `{"prompt":"Hi","temperature":-0.5}`, 400, bad, "temperature", "", "got -0.5"},
		{"top_p 0", cmpl, `{"prompt":"Hi","top_p":0}`, 400, bad, "top_p", "", "top_p must be in (0, 1], got 0"},
		{"top_p 1.5", cmpl, `{"prompt":"Hi","top_p":1.5}`, 400, bad, "top_p", "", "got 1.5"},
		{"top_k -2", cmpl, `{"prompt":"Hi","top_k":-2}`, 400, bad, "top_k", "", "got -2"},
		{"n 0", cmpl, `{"prompt":"Hi","n":0}`, 400, bad, "n", "", "n must be in [1, 128], got 0"},
		{"n over the bound", cmpl, `{"prompt":["a","b","c"],"n":50}`, 400, bad, "n", "", "3 prompts of n = 50 choices each are more than 128 choices"},
		{"best_of", cmpl, `{"prompt":"Hi","n":2,"best_of":3}`, 400, bad, "best_of", unsup, "best_of other than n is not supported"},
		{"suffix", cmpl, `{"prompt":"Hi","suffix":"end"}`, 400, bad, "suffix", unsup, "suffix is not supported"},
		{"stop a number", cmpl, `{"prompt":"Hi","stop":5}`, 400, bad, "stop", "", "stop must be a string or an array of strings"},
		{"stream_options without stream", cmpl, `{"prompt":"Hi","stream_options":{"include_usage":true}}`, 400, bad, "stream_options", "", "only allowed when stream is true"},
		{"no prompt", cmpl, `{"max_tokens":4}`, 400, bad, "prompt", "", "prompt is required"},
		{"prompt a number", cmpl, `{"prompt":5}`, 400, bad, "prompt", "", "prompt must be a string or an array"},
		{"mixed prompts", cmpl, `{"prompt":["a",[1]]}`, 400, bad, "prompt", "", "prompt must be a string, an array of strings"},
		{"empty prompt in a batch", cmpl, `{"prompt":[[1],[]]}`, 400, bad, "prompt", "", "prompt 1 is an empty array of token ids"},
		{"prompt id outside the vocabulary", cmpl, `{"prompt":[1,99999]}`, 400, bad, "prompt", "", "prompt token 1 is id 99999, outside the vocabulary of 512"},
		{"prompt over the context", cmpl, `{"prompt":"` + long + `"}`, 400, bad, "prompt", ctxEx, "maximum context length is 256 tokens"},
		{"prompt and max_tokens over the context", cmpl, `{"prompt":"Hello my name is","max_tokens":255}`, 400, bad, "prompt", ctxEx, "in the completion"},
		{"unknown model", cmpl, `{"model":"gpt-4","prompt":"Hi"}`, 404, bad, "model", "model_not_found", "The model `gpt-4` does not exist"},
		{"logprobs", cmpl, `{"prompt":"Hi","logprobs":9}`, 400, bad, "logprobs", "", "logprobs must be an integer in [0, 5]"},
		{"presence_penalty", cmpl, `{"prompt":"Hi","presence_penalty":2.5}`, 400, bad, "presence_penalty", "", "presence_penalty must be in [-2, 2]"},

		{"no messages", chat, `{"max_tokens":4}`, 400, bad, "messages", "", "messages is required"},
		{"empty messages", chat, `{"messages":[]}`, 400, bad, "messages", "", "at least one message"},
		{"messages a string", chat, `{"messages":"Hi"}`, 400, bad, "messages", "", "messages must be an array"},
		{"message without role", chat, `{"messages":[{"content":"Hi"}]}`, 400, bad, "messages[0].role", "", "messages[0].role is required"},
		{"unknown role", chat, `{"messages":[{"role":"user","content":"Hi"},{"role":"robot","content":"Hi"}]}`, 400, bad, "messages[1].role", "", `got "robot"`},
		{"content a number", chat, `{"messages":[{"role":"user","content":5}]}`, 400, bad, "messages[0].content", "", "must be a string or an array of content parts"},
		{"user content null", chat, `{"messages":[{"role":"user","content":null}]}`, 400, bad, "messages[0].content", "", "required for a user message"},
		{"image part", chat, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, bad, "messages[0].content[0].type", unsup, `"image_url"`},
		{"max_completion_tokens 0", chat, `{` + user + `,"max_completion_tokens":0}`, 400, bad, "max_completion_tokens", "", "max_completion_tokens must be at least 1"},
		{"conversation over the context", chat, `{"messages":[{"role":"user","content":"` + long + `"}]}`, 400, bad, "messages", ctxEx, "maximum context length"},
		{"tools", chat, `{` + user + `,"tools":[{"type":"function","function":{"name":"f"}}]}`, 400, bad, "tools", unsup, "is not supported by this server"},
		{"chat unknown model", chat, `{"model":"llama",` + user + `}`, 404, bad, "model", "model_not_found", "does not exist"},

		{"unknown URL", "/v1/embeddings", `{}`, 404, bad, "", "unknown_url", "Unknown request URL: POST /v1/embeddings"},
		{"wrong method", "/health", ``, 405, bad, "", "method_not_allowed", "use GET"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := ts.post(t, tc.path, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, "%s", body)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			got := decode(t, string(body))
			require.Len(t, got, 1, "only the error object: %s", body)
			errObj := got["error"].(map[string]any)
			require.ElementsMatch(t, []string{"message", "type", "param", "code"}, keys(errObj))
			require.Equal(t, tc.typ, errObj["type"])
			require.Equal(t, nullable(tc.param), errObj["param"])
			require.Equal(t, nullable(tc.code), errObj["code"])
			require.Contains(t, errObj["message"], tc.text)
		})
	}
	// GET on a POST route names the method to use.
	resp, err := http.Get(ts.url + cmpl)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
	require.Zero(t, e.Blocks().InUse())
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// nullable is JSON's null for "", else the string.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestAuth requires the bearer key on /v1/ routes only.
func TestAuth(t *testing.T) {
	ts := start(t, Config{APIKey: "sk-test"}, newEngine(t))
	req := map[string]any{"prompt": "Hi", "max_tokens": 2}
	for _, tc := range []struct {
		name   string
		header []string
		status int
		text   string
	}{
		{"no key", nil, 401, "You didn't provide an API key"},
		{"wrong key", []string{"Authorization", "Bearer sk-wrong"}, 401, "Incorrect API key provided"},
		{"not bearer", []string{"Authorization", "Basic sk-test"}, 401, "You didn't provide an API key"},
		{"right key", []string{"Authorization", "Bearer sk-test"}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := ts.post(t, "/v1/completions", req, tc.header...)
			require.Equal(t, tc.status, resp.StatusCode, "%s", body)
			if tc.status == 401 {
				e := decode(t, string(body))["error"].(map[string]any)
				require.Equal(t, "invalid_request_error", e["type"])
				require.Equal(t, "invalid_api_key", e["code"])
				require.Contains(t, e["message"], tc.text)
				require.NotEmpty(t, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	resp, _ := ts.get(t, "/v1/models")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	for _, open := range []string{"/health", "/metrics"} {
		resp, _ := ts.get(t, open)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s needs no key", open)
	}
}

// TestKeyedRoutes: KeyedRoutes, which serve's --api-key help prints, names exactly the
// routes that answer 401 without the key.
func TestKeyedRoutes(t *testing.T) {
	ts := start(t, Config{APIKey: "sk-test"}, newEngine(t))
	keyed := KeyedRoutes()
	for _, r := range routeTable() {
		path := r.path
		if strings.HasSuffix(path, "/") {
			path += "x"
		}
		req, err := http.NewRequest(r.method, ts.url+path, strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		named := strings.Contains(keyed, path) || strings.HasPrefix(path, "/v1/") && strings.Contains(keyed, "/v1/")
		require.Equal(t, named, resp.StatusCode == http.StatusUnauthorized, "%s %s: %d; KeyedRoutes says %q", r.method, path, resp.StatusCode, keyed)
	}
}

// TestBodyLimit refuses a body over MaxBodyBytes with 413 and an OpenAI error body.
func TestBodyLimit(t *testing.T) {
	ts := start(t, Config{MaxBodyBytes: 1024}, newEngine(t))
	resp, body := ts.post(t, "/v1/completions", `{"prompt":"`+strings.Repeat("a", 4096)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", body)
	e := decode(t, string(body))["error"].(map[string]any)
	require.Equal(t, "invalid_request_error", e["type"])
	require.Equal(t, "request_too_large", e["code"])
	require.Contains(t, e["message"], "larger than the limit of 1024 bytes")

	resp, body = ts.post(t, "/v1/completions", `{"prompt":"Hi","max_tokens":2}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "a small body still passes: %s", body)
	_, m := ts.get(t, "/metrics")
	require.Equal(t, "1", metricValue(string(m), `tpslice_http_requests_total{endpoint="/v1/completions",status="413"}`))
}
