package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func runChatTemplate(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(append([]string{"chat-template"}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// TestChatTemplateFile renders every case of a shared Hugging Face template and requires
// its text exactly, with nothing added.
func TestChatTemplateFile(t *testing.T) {
	tmpl := tokenizerTestdata(t, "templates", "meta-llama-Llama-3.1-8B-Instruct.jinja")
	raw, err := os.ReadFile(strings.TrimSuffix(tmpl, ".jinja") + ".cases.json")
	require.NoError(t, err)
	var cases []struct {
		ID                  string          `json:"id"`
		Messages            json.RawMessage `json:"messages"`
		AddGenerationPrompt bool            `json:"add_generation_prompt"`
		BOS                 string          `json:"bos_token"`
		EOS                 string          `json:"eos_token"`
		Expected            string          `json:"expected"`
	}
	require.NoError(t, json.Unmarshal(raw, &cases))
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			args := []string{"--template", tmpl, "--bos", c.BOS, "--eos", c.EOS, "--messages", writeFile(t, dir, c.ID+".json", string(c.Messages))}
			if !c.AddGenerationPrompt {
				args = append(args, "--no-generation-prompt")
			}
			out, _, err := runChatTemplate(t, args...)
			require.NoError(t, err)
			require.Equal(t, c.Expected, out)
		})
	}
}

// TestChatTemplateModel takes a Hugging Face directory's template and its BOS and EOS
// text; models without one use the plain template and say so.
func TestChatTemplateModel(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "tokenizer.json", `{
		"added_tokens": [{"id": 5, "content": "<|im_start|>", "special": true}, {"id": 6, "content": "<|im_end|>", "special": true}],
		"normalizer": null,
		"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"model": {"type": "BPE", "vocab": {"h": 0, "i": 1, "Ġ": 2, "hi": 3, "Ġhi": 4}, "merges": ["h i", "Ġ hi"]}}`)
	writeFile(t, dir, "tokenizer_config.json", `{"bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
		"chat_template": "{{ bos_token }}{% for m in messages %}{{ m.role }}={{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}>{% endif %}"}`)
	msgs := writeFile(t, t.TempDir(), "m.json", `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}`)

	out, stderr, err := runChatTemplate(t, "--model", dir, "--messages", msgs)
	require.NoError(t, err, stderr)
	require.Equal(t, "<|im_start|>user=hi<|im_end|>>", out)
	out, _, err = runChatTemplate(t, "--model", dir, "--messages", msgs, "--no-generation-prompt")
	require.NoError(t, err)
	require.Equal(t, "<|im_start|>user=hi<|im_end|>", out)

	for _, model := range []string{"stories260K", "tiny"} {
		out, stderr, err := runChatTemplate(t, "--model", model, "--messages", msgs)
		require.NoError(t, err)
		require.Equal(t, "user: hi\nassistant:", out)
		require.Contains(t, stderr, model+" has no chat template; using the server's plain one")
	}
}

func TestChatTemplateErrors(t *testing.T) {
	dir := t.TempDir()
	msgs := writeFile(t, dir, "m.json", `[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]`)
	raising := writeFile(t, dir, "raise.jinja", `{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}`)
	broken := writeFile(t, dir, "broken.jinja", `{% for m in %}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"neither", []string{"--messages", msgs}, "give one of --model and --template"},
		{"both", []string{"--model", "tiny", "--template", raising, "--messages", msgs}, "give one of --model and --template"},
		{"no messages", []string{"--model", "tiny"}, "--messages is required"},
		{"bos with a model", []string{"--model", "tiny", "--bos", "<s>", "--messages", msgs}, "--bos and --eos go with --template"},
		{"unknown model", []string{"--model", "no-such-model", "--messages", msgs}, `--model: engine: model "no-such-model" is not a file, a directory or a built-in model (stories260K, the default`},
		{"missing messages file", []string{"--model", "tiny", "--messages", filepath.Join(dir, "none.json")}, "no such file"},
		{"messages not JSON", []string{"--model", "tiny", "--messages", writeFile(t, dir, "bad.json", "[{")}, "not valid JSON"},
		{"messages not a list", []string{"--model", "tiny", "--messages", writeFile(t, dir, "obj.json", `{"prompt": "hi"}`)}, `an object with "messages"`},
		{"message not an object", []string{"--model", "tiny", "--messages", writeFile(t, dir, "str.json", `["hi"]`)}, "messages[0] must be a JSON object"},
		{"missing template", []string{"--template", filepath.Join(dir, "none.jinja"), "--messages", msgs}, "--template"},
		{"template raises", []string{"--template", raising, "--messages", msgs}, "System role not supported"},
		{"template does not compile", []string{"--template", broken, "--messages", msgs}, "chat template from " + broken},
		{"extra argument", []string{"--model", "tiny", "--messages", msgs, "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runChatTemplate(t, tc.args...)
			require.ErrorContains(t, err, tc.want)
			require.True(t, strings.HasPrefix(err.Error(), "chat-template: "), err.Error())
			require.Empty(t, out)
		})
	}
}
