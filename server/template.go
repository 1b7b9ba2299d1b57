package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"

	"github.com/tpslice/tpslice/models/format"
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
	gf, err := format.ParseGGUFMetadata(path) // the weights' parse rules; errors name the file
	if err != nil {
		return "", "", fmt.Errorf("server: chat template: %w", err)
	}
	source, ok, err := format.NewGGUFMeta(path, gf).String(ggufChatTemplateKey)
	if err != nil {
		return "", "", fmt.Errorf("server: chat template: %w", err)
	}
	if !ok {
		return "", "", nil
	}
	return source, path + " " + ggufChatTemplateKey, nil
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

// ChatTemplate is a compiled chat template. It renders as Hugging Face transformers renders
// chat templates: Jinja with trim_blocks and lstrip_blocks, raise_exception, strftime_now,
// transformers' tojson, and tools and documents None unless given. Safe for concurrent use.
type ChatTemplate struct {
	tmpl   *jinja.Template
	origin string
}

// ChatInput is what one rendering of a chat template gets.
type ChatInput struct {
	// Messages is a JSON array of message objects, given to the template as they are: keys
	// in their order, numbers as Python's json reads them; a key a message lacks is
	// undefined (message.tool_calls is defined only where the message has it).
	Messages json.RawMessage
	// Tools is a JSON array of tool definitions; empty: the template's tools is None.
	Tools json.RawMessage
	// AddGenerationPrompt asks the template to open the assistant's turn.
	AddGenerationPrompt bool
	// BOS and EOS are the text of the vocabulary's BOS and EOS tokens, the template's
	// bos_token and eos_token.
	BOS, EOS string
	// Now is strftime_now's clock (nil: time.Now).
	Now func() time.Time
}

// pythonFilters are the filters this package gives as Python gives them, in place of the
// library's own of the same name (which it resolves before any filter given with the
// data) or where it has none. CompileChatTemplate renames their uses in the source to
// these aliases (see pythonSource).
var pythonFilters = map[string]struct {
	alias string
	fn    func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error)
}{
	"tojson": {"tpslice_hf_tojson", tojsonFilter},
	"string": {"tpslice_hf_string", stringFilter},
	"format": {"tpslice_hf_format", formatFilter}, // the library has none
}

// CompileChatTemplate compiles src, or PlainChatTemplate when src is empty. origin says
// where the source came from, for errors.
func CompileChatTemplate(src, origin string) (t *ChatTemplate, err error) {
	if src == "" {
		src, origin = PlainChatTemplate, "the plain template (the model has none)"
	}
	defer func() { // the library may panic on odd templates; a model file must not crash us
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("server: chat template from %s: the template crashed the Jinja compiler: %v", origin, r)
		}
	}()
	tmpl, err := jinja.Compile(pythonSource(src))
	if err != nil {
		return nil, fmt.Errorf("server: chat template from %s: %w", origin, err)
	}
	return &ChatTemplate{tmpl: tmpl, origin: origin}, nil
}

// Origin says where the template came from.
func (t *ChatTemplate) Origin() string { return t.origin }

// Render renders in as the model's prompt text. Errors name the template's origin and
// carry the template's own message (raise_exception's text).
func (t *ChatTemplate) Render(in ChatInput) (string, error) {
	msgs, err := jsonValue(in.Messages)
	if err != nil || !msgs.IsList() {
		return "", fmt.Errorf("messages must be a JSON array of message objects: %v", errOr(err, "not an array"))
	}
	for i, m := range msgs.AsList().Items {
		if !m.IsDict() {
			return "", fmt.Errorf("messages[%d] must be a JSON object, got %s", i, m)
		}
	}
	tools := jinja.None()
	if len(bytes.TrimSpace(in.Tools)) > 0 {
		if tools, err = jsonValue(in.Tools); err != nil || !(tools.IsList() || tools.IsNone()) {
			return "", fmt.Errorf("tools must be a JSON array of tool definitions: %v", errOr(err, "not an array"))
		}
	}
	out, err := t.render(msgs, tools, in)
	if err != nil {
		return "", fmt.Errorf("%w (template from %s)", err, t.origin)
	}
	return out, nil
}

func errOr(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

// render runs the template on messages and tools already converted to template values.
// Its errors do not name the template's origin: the server answers clients with them, and
// a client must not learn where the server keeps its files.
func (t *ChatTemplate) render(messages, tools jinja.Value, in ChatInput) (out string, err error) {
	now := in.Now
	if now == nil {
		now = time.Now
	}
	data := map[string]jinja.Value{
		"messages": messages, "tools": tools, "documents": jinja.None(),
		"add_generation_prompt": jinja.NewBool(in.AddGenerationPrompt),
		"bos_token":             jinja.NewString(in.BOS), "eos_token": jinja.NewString(in.EOS),
		"strftime_now": strftimeNow(now), // shadows the library's, which reads the wall clock
	}
	for name, f := range pythonFilters {
		data[f.alias] = jinja.NewCallable(name, f.fn)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("the chat template crashed the Jinja renderer: %v", r)
		}
	}()
	out, err = t.tmpl.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("the chat template failed: %w", err)
	}
	return out, nil
}

// renderMessages renders checked chat messages (role and text content, in that key order
// as a client sends them).
func (t *ChatTemplate) renderMessages(msgs []message, addGenerationPrompt bool, bos, eos string) (string, error) {
	list := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		list[i] = d
	}
	return t.render(jinja.NewList(list), jinja.None(), ChatInput{AddGenerationPrompt: addGenerationPrompt, BOS: bos, EOS: eos})
}

// pythonSource rewrites src's {{ }} and {% %} tags so that the library reads them as
// Python's Jinja does; the text between tags is left alone. Tags are found as the
// library's scanner finds them: up to the first closer outside a quoted string. Inside a
// tag, string literals are decoded with Python's escapes (\uXXXX, \xHH, octal, \a, \v,
// a backslash before a newline continuing the line) and adjacent literals joined, then
// written with only the escapes the library knows; and "| name" of a filter in
// pythonFilters becomes its alias.
func pythonSource(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		if src[i] != '{' || i+1 >= len(src) || strings.IndexByte("{%#", src[i+1]) < 0 {
			b.WriteByte(src[i])
			i++
			continue
		}
		closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[src[i+1]]
		b.WriteString(src[i : i+2])
		i += 2
		if closer == "#}" { // a comment: copied as it is
			end := strings.Index(src[i:], closer)
			if end < 0 {
				end = len(src) - i
			}
			b.WriteString(src[i : i+end])
			i += end
			continue
		}
		i = pythonTag(&b, src, i, closer)
	}
	return b.String()
}

// pythonTag rewrites the inside of one tag from src[i:], up to its closer, and returns
// where the closer starts.
func pythonTag(b *strings.Builder, src string, i int, closer string) int {
	for i < len(src) && !strings.HasPrefix(src[i:], closer) {
		switch c := src[i]; c {
		case '\'', '"':
			var text strings.Builder
			for {
				lit, end := stringLiteral(src, i)
				text.WriteString(lit)
				i = end
				next := i
				for next < len(src) && strings.IndexByte(" \t\r\n", src[next]) >= 0 {
					next++
				}
				if next >= len(src) || (src[next] != '\'' && src[next] != '"') {
					break
				}
				i = next // "a" "b" is "ab", as in Python
			}
			writeLibraryString(b, c, text.String())
		case '|':
			j := i + 1
			for j < len(src) && strings.IndexByte(" \t\r\n", src[j]) >= 0 {
				j++
			}
			k := j
			for k < len(src) && isIdentByte(src[k]) {
				k++
			}
			b.WriteString(src[i:j])
			if f, ok := pythonFilters[src[j:k]]; ok {
				b.WriteString(f.alias)
			} else {
				b.WriteString(src[j:k])
			}
			i = k
		default:
			b.WriteByte(c)
			i++
		}
	}
	return i
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// stringLiteral decodes the quoted string starting at src[i] as Jinja does (newlines
// normalized, then Python's unicode-escape) and returns it with the index after it. An
// escape Python rejects (\x without two hex digits) is kept as written, as is an
// unterminated literal's rest.
func stringLiteral(src string, i int) (string, int) {
	quote := src[i]
	var b strings.Builder
	j := i + 1
	for j < len(src) && src[j] != quote {
		c := src[j]
		if c == '\r' { // \r\n and \r are \n, as Jinja normalizes newlines
			b.WriteByte('\n')
			j++
			if j < len(src) && src[j] == '\n' {
				j++
			}
			continue
		}
		if c != '\\' || j+1 >= len(src) {
			b.WriteByte(c)
			j++
			continue
		}
		e := src[j+1]
		j += 2
		switch e {
		case '\n':
		case '\r':
			if j < len(src) && src[j] == '\n' {
				j++
			}
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			r, err := strconv.ParseUint(src[j:min(j+n, len(src))], 16, 32)
			if err != nil || j+n > len(src) || r > utf8.MaxRune {
				b.WriteString(src[j-2 : j])
				continue
			}
			b.WriteRune(rune(r))
			j += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			r := rune(e - '0')
			for k := 0; k < 2 && j < len(src) && src[j] >= '0' && src[j] <= '7'; k++ {
				r = r*8 + rune(src[j]-'0')
				j++
			}
			b.WriteRune(r)
		default:
			b.WriteString(src[j-2 : j])
		}
	}
	return b.String(), min(j+1, len(src))
}

// writeLibraryString writes s as a string literal that the library's tokenizer reads back
// as s: it knows only \\, \' and \" (and \n, \t), and takes every other byte as it is.
func writeLibraryString(b *strings.Builder, quote byte, s string) {
	b.WriteByte(quote)
	for i := 0; i < len(s); i++ {
		if s[i] == quote || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte(quote)
}
