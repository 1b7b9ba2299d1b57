package server

import (
	"bytes"
	"encoding/json"

	"github.com/tpslice/tpslice/models/tokenizer"
)

// completionPrompt reads /v1/completions' prompt: a string, an array of one string, an
// array of token ids, or an array of one array of token ids. Text is tokenized as
// engine.Generate tokenizes it (BOS where the vocabulary adds it, special-token text as
// plain text), so the server and the Go API see the same ids.
func completionPrompt(raw json.RawMessage, tok *tokenizer.Tokenizer) ([]int32, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "prompt is required")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return encodeText(text, tok)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("prompt", "prompt must be a string or an array, got %s", clip(raw))
	}
	if len(list) == 0 {
		return nil, badRequest("prompt", "prompt is an empty array")
	}
	for i, item := range list { // json.Unmarshal would read a null as token 0
		if string(bytes.TrimSpace(item)) == "null" {
			return nil, badRequest("prompt", "prompt item %d is null: want a string or a token id", i)
		}
	}
	var ids []int32
	if err := json.Unmarshal(raw, &ids); err == nil {
		return checkIDs(ids, tok)
	}
	if len(list) > 1 {
		return nil, badRequest("prompt", "batched prompts are not supported: give one prompt, got %d", len(list))
	}
	if err := json.Unmarshal(list[0], &text); err == nil {
		return encodeText(text, tok)
	}
	if err := json.Unmarshal(list[0], &ids); err == nil && len(ids) > 0 {
		return checkIDs(ids, tok)
	}
	return nil, badRequest("prompt", "prompt must be a string, an array of one string or an array of token ids, got %s", clip(raw))
}

func encodeText(text string, tok *tokenizer.Tokenizer) ([]int32, *apiError) {
	ids, err := tok.Encode(text, true)
	if err != nil {
		return nil, badRequest("prompt", "tokenizing the prompt: %v", err)
	}
	if len(ids) == 0 {
		return nil, badRequest("prompt", "the prompt is empty and the vocabulary adds no BOS token")
	}
	return toInt32(ids), nil
}

func checkIDs(ids []int32, tok *tokenizer.Tokenizer) ([]int32, *apiError) {
	for i, id := range ids {
		if id < 0 || int(id) >= tok.VocabSize() {
			return nil, badRequest("prompt", "prompt token %d is id %d, outside the vocabulary of %d", i, id, tok.VocabSize())
		}
	}
	return ids, nil
}

func toInt32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// checkContext rejects a prompt that leaves no room in the context, or no room for
// max tokens (vLLM's rule), with OpenAI's code context_length_exceeded.
func checkContext(n int, p params, contextLen int, param string) *apiError {
	var e *apiError
	switch {
	case n >= contextLen:
		e = badRequest(param, "This model's maximum context length is %d tokens. However, your %s has %d tokens, "+
			"leaving no room for the completion. Please reduce the length of the %s.", contextLen, param, n, param)
	case p.maxTokens > 0 && n+p.maxTokens > contextLen:
		e = badRequest(param, "This model's maximum context length is %d tokens. However, you requested %d tokens "+
			"(%d in the %s, %d in the completion). Please reduce the length of the %s or %s.",
			contextLen, n+p.maxTokens, n, param, p.maxTokens, param, p.maxParam)
	default:
		return nil
	}
	e.Code = "context_length_exceeded"
	return e
}

// encodeChat tokenizes a rendered chat prompt as llama.cpp does with parse_special: the
// control tokens a template writes as text ("<s>", "<|im_start|>") become their ids, and
// with addBOS, BOS is prepended where the vocabulary adds it unless the template wrote it.
// The result may be empty.
func encodeChat(text string, tok *tokenizer.Tokenizer, addBOS bool) ([]int32, error) {
	out, err := tok.Tokenize(text, false, true)
	if err != nil {
		return nil, err
	}
	if addBOS && tok.AddsBOS() && tok.BOS() >= 0 && (len(out) == 0 || out[0] != tok.BOS()) {
		out = append([]int{tok.BOS()}, out...)
	}
	return toInt32(out), nil
}
