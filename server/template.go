package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ardanlabs/jinja"
	gguf "github.com/gpustack/gguf-parser-go"
)

// PlainChatTemplate is the chat template of models that ship none (the presets): one
// "role: content" line per message, then "assistant:" for the reply.
const PlainChatTemplate = "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}" +
	"{% if add_generation_prompt %}assistant:{% endif %}"

// ggufChatTemplateKey is where GGUF files keep the model's Jinja chat template.
const ggufChatTemplateKey = "tokenizer.chat_template"

// LoadChatTemplate finds the Jinja chat template of a model given as engine.Config.Model
// names it: the tokenizer.chat_template metadata of a GGUF file, or in a Hugging Face
// directory chat_template.jinja or tokenizer_config.json's chat_template (a string, or a
// list of named templates of which "default" or else the first is taken). It returns the
// source and where it was found, or "" for a preset or a model without a template.
func LoadChatTemplate(model string) (source, origin string, err error) {
	st, err := os.Stat(model)
	if err != nil {
		return "", "", nil // a preset: no files, no template
	}
	if !st.IsDir() {
		return ggufChatTemplate(model)
	}
	path := filepath.Join(model, "chat_template.jinja")
	if b, err := os.ReadFile(path); err == nil {
		return string(b), path, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("server: chat template: %w", err)
	}
	return hfChatTemplate(filepath.Join(model, "tokenizer_config.json"))
}

// ggufChatTemplate reads tokenizer.chat_template from a GGUF file's metadata.
func ggufChatTemplate(path string) (source, origin string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", fmt.Errorf("server: chat template: %w", err)
	}
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	f.Close()
	if err != nil || string(magic) != "GGUF" {
		return "", "", nil // not a GGUF file: the engine says what it is
	}
	defer func() { // gguf-parser-go panics on some malformed values
		if r := recover(); r != nil {
			source, origin, err = "", "", fmt.Errorf("server: chat template: %s: malformed GGUF: %v", path, r)
		}
	}()
	gf, err := gguf.ParseGGUFFile(path, gguf.SkipLargeMetadata())
	if err != nil {
		return "", "", fmt.Errorf("server: chat template: %s: %w", path, err)
	}
	kv, ok := gf.Header.MetadataKV.Get(ggufChatTemplateKey)
	if !ok {
		return "", "", nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeString {
		return "", "", fmt.Errorf("server: chat template: %s: %s is a %v, not a string", path, ggufChatTemplateKey, kv.ValueType)
	}
	return kv.ValueString(), path + " " + ggufChatTemplateKey, nil
}

// hfChatTemplate reads chat_template from a Hugging Face tokenizer_config.json.
func hfChatTemplate(path string) (source, origin string, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("server: chat template: %w", err)
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", "", fmt.Errorf("server: chat template: %s: %w", path, err)
	}
	origin = path + " chat_template"
	if len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null" {
		return "", "", nil
	}
	var one string
	if err := json.Unmarshal(cfg.ChatTemplate, &one); err == nil {
		return one, origin, nil
	}
	var named []struct{ Name, Template string }
	if err := json.Unmarshal(cfg.ChatTemplate, &named); err != nil || len(named) == 0 {
		return "", "", fmt.Errorf("server: chat template: %s: chat_template must be a string or a list of {name, template}", path)
	}
	for _, t := range named {
		if t.Name == "default" {
			return t.Template, origin + " (default)", nil
		}
	}
	return named[0].Template, fmt.Sprintf("%s (%s)", origin, named[0].Name), nil
}

// chatTemplate is a compiled chat template.
type chatTemplate struct {
	tmpl   *jinja.Template
	origin string
}

// compileChatTemplate compiles src, or PlainChatTemplate when src is empty.
func compileChatTemplate(src, origin string) (*chatTemplate, error) {
	if src == "" {
		src, origin = PlainChatTemplate, "the plain template (the model has none)"
	}
	t, err := jinja.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("server: chat template from %s: %w", origin, err)
	}
	return &chatTemplate{tmpl: t, origin: origin}, nil
}

// render writes the conversation as the model's prompt text, ending with the assistant's
// turn. bos and eos are the text of the vocabulary's BOS and EOS tokens, which Hugging Face
// templates use as bos_token and eos_token.
func (t *chatTemplate) render(msgs []message, bos, eos string) (string, error) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	out, err := t.tmpl.Render(map[string]any{
		"messages": list, "add_generation_prompt": true, "bos_token": bos, "eos_token": eos,
	})
	if err != nil {
		return "", fmt.Errorf("the chat template (%s) failed: %w", t.origin, err)
	}
	return out, nil
}
