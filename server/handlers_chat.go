package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/models/tokenizer"
)

// chatFields are the fields only /v1/chat/completions has.
type chatFields struct {
	Messages            json.RawMessage `json:"messages"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
}

// message is one turn of a conversation, its content flattened to text.
type message struct {
	Role, Content string
}

// chatRoles are the roles a message may have.
var chatRoles = []string{"system", "developer", "user", "assistant", "tool"}

// chatCompletions serves POST /v1/chat/completions: the conversation is rendered with the
// chat template, tokenized with its special tokens, and generated from like a completion.
func (s *Server) chatCompletions(rc *fasthttp.RequestCtx, l *loaded, arrived time.Time) *apiError {
	p, ids, e := s.decodeChat(rc.PostBody(), l)
	if e != nil {
		return e
	}
	c := chatStream{id: newID("chatcmpl-"), created: time.Now().Unix(), model: l.name, includeUsage: p.includeUsage, tok: l.e.Tokenizer()}
	return s.generate(rc, l, p, [][]int32{ids}, arrived, "/v1/chat/completions", c)
}

// decodeChat decodes and checks a /v1/chat/completions body: its parameters and the ids
// of the rendered conversation, which fit the context with max_tokens.
func (s *Server) decodeChat(body []byte, l *loaded) (params, []int32, *apiError) {
	var f chatFields
	if err := json.Unmarshal(body, &f); err != nil {
		return params{}, nil, decodeError(err)
	}
	p, e := decodeParams(body, l.vocab, true, "max_completion_tokens", f.MaxCompletionTokens)
	if e != nil {
		return p, nil, e
	}
	if e := checkModel(p.model, l); e != nil {
		return p, nil, e
	}
	msgs, e := parseMessages(f.Messages)
	if e != nil {
		return p, nil, e
	}
	text, err := s.tmpl.renderMessages(msgs, true, l.bos, l.eos)
	if err != nil {
		return p, nil, badRequest("messages", "%v", err)
	}
	ids, err := encodeChat(text, l.e.Tokenizer(), true)
	if err != nil {
		return p, nil, badRequest("messages", "tokenizing the rendered conversation: %v", err)
	}
	if len(ids) == 0 {
		return p, nil, badRequest("messages", "the rendered conversation is empty and the vocabulary adds no BOS token")
	}
	return p, ids, checkContext(len(ids), p, l.contextLen, "messages")
}

// parseMessages checks messages: a non-empty array of {role, content}, content a string or
// an array of text parts (joined with newlines, as vLLM joins them); only an assistant's
// content may be null.
func parseMessages(raw json.RawMessage) ([]message, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("messages", "messages is required")
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("messages", "messages must be an array of messages, got %s", clip(raw))
	}
	if len(list) == 0 {
		return nil, badRequest("messages", "messages must hold at least one message")
	}
	out := make([]message, len(list))
	for i, m := range list {
		param := fmt.Sprintf("messages[%d]", i)
		var in struct {
			Role    *string         `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(m, &in); err != nil {
			return nil, badRequest(param, "%s must be an object with a string role and content, got %s", param, clip(m))
		}
		switch {
		case in.Role == nil:
			return nil, badRequest(param+".role", "%s.role is required", param)
		case !slices.Contains(chatRoles, *in.Role):
			return nil, badRequest(param+".role", "%s.role must be one of %s, got %q", param, strings.Join(chatRoles, ", "), *in.Role)
		}
		content, e := messageContent(in.Content, *in.Role, param+".content")
		if e != nil {
			return nil, e
		}
		out[i] = message{Role: *in.Role, Content: content}
	}
	return out, nil
}

// messageContent flattens a message's content to text.
func messageContent(raw json.RawMessage, role, param string) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		if role == "assistant" {
			return "", nil
		}
		return "", badRequest(param, "%s is required for a %s message", param, role)
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(param, "%s must be a string or an array of content parts, got %s", param, clip(raw))
	}
	texts := make([]string, len(parts))
	for k, part := range parts {
		var p struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		pp := fmt.Sprintf("%s[%d]", param, k)
		if err := json.Unmarshal(part, &p); err != nil {
			return "", badRequest(pp, "%s must be an object {type, text}, got %s", pp, clip(part))
		}
		if p.Type != "text" {
			return "", unsupported(pp+".type", fmt.Sprintf("content of type %q (only \"text\")", p.Type))
		}
		if p.Text == nil {
			return "", badRequest(pp+".text", "%s.text is required", pp)
		}
		texts[k] = *p.Text
	}
	return strings.Join(texts, "\n"), nil
}

// chatStream makes the chunks of a streamed chat completion.
type chatStream struct {
	id           string
	created      int64
	model        string
	includeUsage bool
	tok          *tokenizer.Tokenizer
}

func (c chatStream) chunk(choices []chatChunkChoice, u *usage) chatChunk {
	return chatChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: choices,
		Usage: usageJSON(u, c.includeUsage)}
}

func (c chatStream) head(i int) []any {
	return []any{c.chunk([]chatChunkChoice{{Index: i, Delta: chatDelta{Role: "assistant", Content: ptr("")}}}, nil)}
}

func (c chatStream) token(i int, text string, lps []engine.TokenLogprobs) any {
	return c.chunk([]chatChunkChoice{{Index: i, Delta: chatDelta{Content: &text}, Logprobs: chatLogprobsOf(c.tok, lps)}}, nil)
}

func (c chatStream) finish(i int, reason string, lps []engine.TokenLogprobs) any {
	return c.chunk([]chatChunkChoice{{Index: i, FinishReason: ptr(reason), Logprobs: chatLogprobsOf(c.tok, lps)}}, nil)
}

func (c chatStream) usage(u *usage) any { return c.chunk([]chatChunkChoice{}, u) }

func (c chatStream) whole(res []engine.Result, u *usage) any {
	choices := make([]chatChoice, len(res))
	for i, r := range res {
		choices[i] = chatChoice{Index: i, Message: chatMessage{Role: "assistant", Content: r.Text}, Logprobs: chatLogprobsOf(c.tok, r.Logprobs),
			FinishReason: r.FinishReason}
	}
	return chatCompletion{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model, Choices: choices, Usage: u}
}
