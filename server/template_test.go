package server

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/models/format"
)

func TestLoadChatTemplate(t *testing.T) {
	const tmpl = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return filepath.Dir(p)
	}
	writeGGUF := func(name string, meta ...format.GGUFKV) string {
		p := filepath.Join(dir, name)
		require.NoError(t, format.WriteGGUF(p, append([]format.GGUFKV{{Key: "general.architecture", Value: "llama"}}, meta...), nil))
		return p
	}
	gguf := writeGGUF("model.gguf", format.GGUFKV{Key: "tokenizer.chat_template", Value: tmpl})
	bare := writeGGUF("bare.gguf")

	for _, tc := range []struct {
		name, model, want, origin string
	}{
		{"preset", "tiny", "", ""},
		{"GGUF", gguf, tmpl, gguf + " tokenizer.chat_template"},
		{"GGUF without a template", bare, "", ""},
		{"tokenizer_config string", write("hf1/tokenizer_config.json", `{"chat_template": "`+tmpl+`"}`), tmpl, "chat_template"},
		{"tokenizer_config list", write("hf2/tokenizer_config.json", `{"chat_template": [{"name": "tool_use", "template": "x"}, {"name": "default", "template": "`+tmpl+`"}]}`), tmpl, "(default)"},
		{"chat_template.jinja", write("hf3/chat_template.jinja", tmpl), tmpl, "chat_template.jinja"},
		{"directory without one", write("hf4/tokenizer_config.json", `{"bos_token": "<s>"}`), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, origin, err := LoadChatTemplate(tc.model)
			require.NoError(t, err)
			require.Equal(t, tc.want, src)
			require.Contains(t, origin, tc.origin)
		})
	}
	_, _, err := LoadChatTemplate(write("hf5/tokenizer_config.json", `{"chat_template": 5}`))
	require.ErrorContains(t, err, "chat_template must be a string or a list")
	notText := writeGGUF("number.gguf", format.GGUFKV{Key: "tokenizer.chat_template", Value: uint32(5)})
	_, _, err = LoadChatTemplate(notText)
	require.ErrorContains(t, err, "server: chat template: gguf "+notText+": metadata key tokenizer.chat_template holds Uint32, want a string")
	_, err = New(Config{ChatTemplate: "{% for x in %}", ChatTemplateOrigin: "broken.gguf"})
	require.ErrorContains(t, err, "chat template from broken.gguf")
}

// TestChatTemplateSpecialTokens: the model's template writes BOS and EOS as text; the
// server turns that text into the control tokens, without a second BOS.
func TestChatTemplateSpecialTokens(t *testing.T) {
	e := newEngine(t)
	const tmpl = "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System messages are not supported') }}{% endif %}" +
		"[INST] {{ m.content }} [/INST]{{ eos_token }}{% endfor %}"
	ts := start(t, Config{ChatTemplate: tmpl}, e)
	tok := e.Tokenizer()
	text, err := tok.Encode("[INST] Hello my name is [/INST]", false)
	require.NoError(t, err)
	ids := append([]int32{int32(tok.BOS())}, toInt32(text)...)
	ids = append(ids, int32(tok.EOS()))
	want := generate(t, e, engine.Request{PromptIDs: ids, MaxTokens: 6})

	resp, body := ts.post(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Hello my name is"}},
		"max_tokens": 6, "temperature": 0})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	got := decode(t, string(body))
	require.Equal(t, float64(len(ids)), got["usage"].(map[string]any)["prompt_tokens"])
	require.Equal(t, want.Text, got["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"])

	resp, body = ts.post(t, "/v1/chat/completions", map[string]any{"messages": chatMessages})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
	e400 := decode(t, string(body))["error"].(map[string]any)
	require.Equal(t, "messages", e400["param"])
	require.Contains(t, e400["message"], "System messages are not supported")
}

// TestChatTemplateErrorHidesOrigin: a template's raise_exception reaches the client as a
// 400 with the template's message, but not the template's path on the server, on every
// route that renders a conversation.
func TestChatTemplateErrorHidesOrigin(t *testing.T) {
	const origin = "/srv/secret-models/llama.gguf chat_template"
	ts := start(t, Config{ChatTemplate: "{{ raise_exception('Roles must alternate') }}", ChatTemplateOrigin: origin}, newEngine(t))
	for _, path := range []string{"/v1/chat/completions", "/tokenize"} {
		resp, body := ts.post(t, path, map[string]any{"messages": chatMessages})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", path, body)
		require.Contains(t, string(body), "Roles must alternate", path)
		require.NotContains(t, string(body), "secret-models", path)
	}
}
