package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tpslice/tpslice/models/tokenizer"
)

// tokenizeRequest is vLLM's TokenizeCompletionRequest ({"prompt"}) or TokenizeChatRequest
// ({"messages"}), told apart by which field is present. Pointers tell an absent field from
// a zero one.
type tokenizeRequest struct {
	Model                string          `json:"model"`
	Prompt               json.RawMessage `json:"prompt"`
	Messages             json.RawMessage `json:"messages"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	AddSpecialTokens     *bool           `json:"add_special_tokens"`
	ReturnTokenStrs      *bool           `json:"return_token_strs"`
	ContinueFinalMessage *bool           `json:"continue_final_message"`
	Tools                json.RawMessage `json:"tools"`
	ChatTemplate         *string         `json:"chat_template"`
	ChatTemplateKwargs   json.RawMessage `json:"chat_template_kwargs"`
}

// tokenizeResponse is vLLM's TokenizeResponse.
type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int32  `json:"tokens"`
	TokenStrs   []string `json:"token_strs,omitempty"` // with return_token_strs
}

// tokenize serves POST /tokenize as vLLM does. A prompt is tokenized as /v1/completions
// tokenizes it (add_special_tokens, default true: BOS where the vocabulary adds it);
// messages are rendered with the chat template (add_generation_prompt, default true) and
// tokenized as /v1/chat/completions tokenizes them, control-token text becoming the control
// tokens, with BOS added only with add_special_tokens (default false, as vLLM: the template
// writes it). So with add_special_tokens true the ids are the chat completion's prompt.
func (s *Server) tokenize(rc *fasthttp.RequestCtx, l *loaded, _ time.Time) *apiError {
	var req tokenizeRequest
	if err := json.Unmarshal(rc.PostBody(), &req); err != nil {
		return decodeError(err)
	}
	if e := checkModel(req.Model, l); e != nil {
		return e
	}
	hasPrompt, hasMessages := present(req.Prompt), present(req.Messages)
	switch {
	case hasPrompt && hasMessages:
		return badRequest("messages", "give either prompt or messages, not both")
	case !hasPrompt && !hasMessages:
		return badRequest("prompt", "prompt (a string) or messages (a conversation) is required")
	}
	tok := l.e.Tokenizer()
	var ids []int32
	if hasPrompt {
		var text string
		if err := json.Unmarshal(req.Prompt, &text); err != nil {
			return badRequest("prompt", "prompt must be a string, got %s", clip(req.Prompt))
		}
		got, err := tok.Encode(text, req.AddSpecialTokens == nil || *req.AddSpecialTokens)
		if err != nil {
			return badRequest("prompt", "tokenizing the prompt: %v", err)
		}
		ids = toInt32(got)
	} else {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"continue_final_message", req.ContinueFinalMessage != nil && *req.ContinueFinalMessage},
			{"tools", present(req.Tools) && string(bytes.TrimSpace(req.Tools)) != "[]"},
			{"chat_template", req.ChatTemplate != nil},
			{"chat_template_kwargs", present(req.ChatTemplateKwargs) && string(bytes.TrimSpace(req.ChatTemplateKwargs)) != "{}"},
		} {
			if f.set {
				return unsupported(f.name, f.name)
			}
		}
		msgs, e := parseMessages(req.Messages)
		if e != nil {
			return e
		}
		text, err := s.tmpl.renderMessages(msgs, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt, l.bos, l.eos)
		if err != nil {
			return badRequest("messages", "%v", err)
		}
		if ids, err = encodeChat(text, tok, req.AddSpecialTokens != nil && *req.AddSpecialTokens); err != nil {
			return badRequest("messages", "tokenizing the rendered conversation: %v", err)
		}
	}
	resp := tokenizeResponse{Count: len(ids), MaxModelLen: l.contextLen, Tokens: ids}
	if req.ReturnTokenStrs != nil && *req.ReturnTokenStrs {
		resp.TokenStrs = make([]string, len(ids))
		for i, id := range ids {
			resp.TokenStrs[i] = tok.Piece(int(id))
		}
	}
	writeJSON(rc, resp)
	return nil
}

// present reports whether a JSON field was given as something other than null.
func present(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && string(t) != "null"
}

// detokenizeRequest is vLLM's DetokenizeRequest.
type detokenizeRequest struct {
	Model  string          `json:"model"`
	Tokens json.RawMessage `json:"tokens"`
}

// detokenize serves POST /detokenize as vLLM does: the ids' text, control tokens written
// as their text ("<|im_start|>"), as Hugging Face's decode and llama.cpp's /detokenize
// write them; bytes that do not form UTF-8 (ids that cut a character) become U+FFFD.
func (s *Server) detokenize(rc *fasthttp.RequestCtx, l *loaded, _ time.Time) *apiError {
	var req detokenizeRequest
	if err := json.Unmarshal(rc.PostBody(), &req); err != nil {
		return decodeError(err)
	}
	if e := checkModel(req.Model, l); e != nil {
		return e
	}
	if !present(req.Tokens) {
		return badRequest("tokens", "tokens (an array of token ids) is required")
	}
	var ids []int
	if err := json.Unmarshal(req.Tokens, &ids); err != nil {
		return badRequest("tokens", "tokens must be an array of integer token ids, got %s", clip(req.Tokens))
	}
	tok := l.e.Tokenizer()
	for i, id := range ids {
		if id < 0 || id >= tok.VocabSize() {
			return badRequest("tokens", "tokens[%d] is id %d, outside the vocabulary of %d", i, id, tok.VocabSize())
		}
	}
	text, err := detokenizeText(ids, tok)
	if err != nil {
		return badRequest("tokens", "%v", err)
	}
	writeJSON(rc, map[string]string{"prompt": text})
	return nil
}

// detokenizeText writes control and unknown tokens as their vocabulary text and decodes
// the runs between them. A run after such a token is decoded with it in front, so that
// the tokenizer's leading-space strip (SentencePiece) applies only at the very start, as
// in one Decode of the whole.
func detokenizeText(ids []int, tok *tokenizer.Tokenizer) (string, error) {
	var b bytes.Buffer
	start := 0
	flush := func(end int) error {
		if end == start {
			return nil
		}
		from := start
		if from > 0 {
			from-- // the special token before the run decodes to nothing
		}
		s, err := tok.Decode(ids[from:end])
		b.WriteString(s)
		return err
	}
	for i, id := range ids {
		if !tok.IsSpecial(id) {
			continue
		}
		if err := flush(i); err != nil {
			return "", fmt.Errorf("decoding: %w", err)
		}
		b.WriteString(tok.Piece(id))
		start = i + 1
	}
	if err := flush(len(ids)); err != nil {
		return "", fmt.Errorf("decoding: %w", err)
	}
	return b.String(), nil
}
