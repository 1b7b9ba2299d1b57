package server

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// tokenizeResult is a /tokenize body as JSON decodes it.
type tokenizeResult struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int32  `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

func (ts *testServer) tokenize(t *testing.T, body any, header ...string) tokenizeResult {
	t.Helper()
	resp, raw := ts.post(t, "/tokenize", body, header...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	got := decode(t, string(raw))
	require.ElementsMatch(t, []string{"count", "max_model_len", "tokens"}, keys(got), "only vLLM's fields unless token strings are asked for: %s", raw)
	var r tokenizeResult
	r.Count, r.MaxModelLen = int(got["count"].(float64)), int(got["max_model_len"].(float64))
	for _, id := range got["tokens"].([]any) {
		r.Tokens = append(r.Tokens, int32(id.(float64)))
	}
	return r
}

func (ts *testServer) detokenize(t *testing.T, ids []int32) string {
	t.Helper()
	resp, raw := ts.post(t, "/detokenize", map[string]any{"tokens": ids})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	got := decode(t, string(raw))
	require.Len(t, got, 1, "%s", raw)
	return got["prompt"].(string)
}

// TestTokenizePrompt: a prompt gives the ids /v1/completions feeds the model (BOS by
// default, as vLLM's add_special_tokens true), the context length, and back its text.
func TestTokenizePrompt(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, e)
	tok := e.Tokenizer()
	const text = "Hello my name is"
	withBOS, err := tok.Encode(text, true)
	require.NoError(t, err)
	require.Equal(t, tok.BOS(), withBOS[0], "the tiny vocab adds BOS")

	got := ts.tokenize(t, map[string]any{"model": "tiny", "prompt": text})
	require.Equal(t, toInt32(withBOS), got.Tokens)
	require.Equal(t, len(withBOS), got.Count)
	require.Equal(t, e.Model().Config().ContextLength, got.MaxModelLen)
	require.Equal(t, completionPromptTokens(t, ts, text), got.Count, "the count is the completion's prompt_tokens")

	plain := ts.tokenize(t, map[string]any{"prompt": text, "add_special_tokens": false})
	require.Equal(t, toInt32(withBOS[1:]), plain.Tokens)
	require.Empty(t, ts.tokenize(t, map[string]any{"prompt": "", "add_special_tokens": false}).Tokens)

	resp, raw := ts.post(t, "/tokenize", map[string]any{"prompt": text, "return_token_strs": true})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	strs := decode(t, string(raw))["token_strs"].([]any)
	require.Len(t, strs, len(withBOS))
	require.Equal(t, "<s>", strs[0])

	require.Equal(t, "<s> "+text, ts.detokenize(t, got.Tokens), "control tokens are written, as vLLM and llama.cpp do")
	require.Equal(t, text, ts.detokenize(t, plain.Tokens))
	require.Equal(t, "", ts.detokenize(t, []int32{}))
}

// completionPromptTokens returns the prompt_tokens /v1/completions reports for text.
func completionPromptTokens(t *testing.T, ts *testServer, text string) int {
	t.Helper()
	resp, raw := ts.post(t, "/v1/completions", map[string]any{"prompt": text, "max_tokens": 1})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	return int(decode(t, string(raw))["usage"].(map[string]any)["prompt_tokens"].(float64))
}

// TestTokenizeMessages: messages are rendered with the chat template and their
// control-token text becomes the control tokens; with add_special_tokens the ids are
// exactly the chat completion's prompt.
func TestTokenizeMessages(t *testing.T) {
	e := newEngine(t)
	const tmpl = "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}" +
		"{% if add_generation_prompt %}[assistant]{% endif %}"
	ts := start(t, Config{ChatTemplate: tmpl}, e)
	tok := e.Tokenizer()
	msgs := []any{map[string]any{"role": "user", "content": "Hello my name is"}}

	got := ts.tokenize(t, map[string]any{"messages": msgs})
	body, err := tok.Encode("[user] Hello my name is", false)
	require.NoError(t, err)
	gen, err := tok.Encode("[assistant]", false)
	require.NoError(t, err)
	want := append(append(append([]int{tok.BOS()}, body...), tok.EOS()), gen...)
	require.Equal(t, toInt32(want), got.Tokens, "BOS and EOS written by the template are single tokens")

	noGen := ts.tokenize(t, map[string]any{"messages": msgs, "add_generation_prompt": false})
	require.Equal(t, toInt32(want[:len(want)-len(gen)]), noGen.Tokens)

	resp, raw := ts.post(t, "/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 1})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	prompt := decode(t, string(raw))["usage"].(map[string]any)["prompt_tokens"].(float64)
	require.Equal(t, int(prompt), got.Count)

	// The plain template writes no BOS: vLLM's default (false) adds none, true adds it as
	// the chat completion does.
	plain := start(t, Config{}, e)
	bare := plain.tokenize(t, map[string]any{"messages": msgs})
	require.NotEqual(t, int32(tok.BOS()), bare.Tokens[0])
	withBOS := plain.tokenize(t, map[string]any{"messages": msgs, "add_special_tokens": true})
	require.Equal(t, append([]int32{int32(tok.BOS())}, bare.Tokens...), withBOS.Tokens)
	// SentencePiece prefixes a space to the text after a control token, which decodes back.
	require.Equal(t, "<s> [user] Hello my name is</s> [assistant]", ts.detokenize(t, got.Tokens))
}

// TestTokenizeBadRequests: wrong input is a 400 naming the field; the key guards both
// endpoints like /v1/.
func TestTokenizeBadRequests(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, e)
	const bad, unsup = "invalid_request_error", "unsupported_parameter"
	user := `"messages":[{"role":"user","content":"Hi"}]`
	for _, tc := range []struct {
		name, path, body  string
		status            int
		param, code, text string
	}{
		{"malformed JSON", "/tokenize", `{"prompt":`, 400, "", "", "not valid JSON"},
		{"neither", "/tokenize", `{}`, 400, "prompt", "", "prompt (a string) or messages (a conversation) is required"},
		{"both", "/tokenize", `{"prompt":"Hi",` + user + `}`, 400, "messages", "", "either prompt or messages"},
		{"prompt a number", "/tokenize", `{"prompt":5}`, 400, "prompt", "", "prompt must be a string"},
		{"prompt ids", "/tokenize", `{"prompt":[1,2]}`, 400, "prompt", "", "prompt must be a string"},
		{"add_special_tokens a string", "/tokenize", `{"prompt":"Hi","add_special_tokens":"yes"}`, 400, "add_special_tokens", "", "must be a boolean"},
		{"messages a string", "/tokenize", `{"messages":"Hi"}`, 400, "messages", "", "messages must be an array"},
		{"unknown role", "/tokenize", `{"messages":[{"role":"robot","content":"Hi"}]}`, 400, "messages[0].role", "", `got "robot"`},
		{"continue_final_message", "/tokenize", `{` + user + `,"continue_final_message":true}`, 400, "continue_final_message", unsup, "not supported"},
		{"tools", "/tokenize", `{` + user + `,"tools":[{"type":"function"}]}`, 400, "tools", unsup, "not supported"},
		{"unknown model", "/tokenize", `{"model":"gpt-4","prompt":"Hi"}`, 404, "model", "model_not_found", "does not exist"},
		{"no tokens", "/detokenize", `{}`, 400, "tokens", "", "tokens (an array of token ids) is required"},
		{"tokens a string", "/detokenize", `{"tokens":"1 2"}`, 400, "tokens", "", "tokens must be an array of integer token ids"},
		{"fractional id", "/detokenize", `{"tokens":[1.5]}`, 400, "tokens", "", "integer token ids"},
		{"id outside the vocabulary", "/detokenize", `{"tokens":[1,99999]}`, 400, "tokens", "", "tokens[1] is id 99999, outside the vocabulary of 512"},
		{"negative id", "/detokenize", `{"tokens":[-1]}`, 400, "tokens", "", "tokens[0] is id -1"},
		{"detokenize unknown model", "/detokenize", `{"model":"gpt-4","tokens":[1]}`, 404, "model", "model_not_found", "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := ts.post(t, tc.path, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, "%s", body)
			errObj := decode(t, string(body))["error"].(map[string]any)
			require.Equal(t, bad, errObj["type"])
			require.Equal(t, nullable(tc.param), errObj["param"])
			require.Equal(t, nullable(tc.code), errObj["code"])
			require.Contains(t, errObj["message"], tc.text)
		})
	}
	resp, err := http.Get(ts.url + "/tokenize")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	keyed := start(t, Config{APIKey: "sk-test"}, e)
	for _, path := range []string{"/tokenize", "/detokenize"} {
		body := map[string]any{"prompt": "Hi", "tokens": []int{1}}
		if path == "/tokenize" {
			delete(body, "tokens")
		}
		resp, raw := keyed.post(t, path, body)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s needs the key: %s", path, raw)
		resp, raw = keyed.post(t, path, body, "Authorization", "Bearer sk-test")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s with the key: %s", path, raw)
	}
}
