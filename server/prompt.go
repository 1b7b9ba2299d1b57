package server

import (
	"bytes"
	"encoding/json"

	"github.com/tpslice/tpslice/models/tokenizer"
)

// completionPrompt reads /v1/completions' prompt: a string, an array of token ids, or a
// batch of prompts, an array of strings or of arrays of token ids (OpenAI's four forms),
// and returns each prompt's ids, and its text where the client gave text. Text is
// tokenized as engine.Generate tokenizes it (BOS where the vocabulary adds it,
// special-token text as plain text), so the server and the Go API see the same ids.
func completionPrompt(raw json.RawMessage, tok *tokenizer.Tokenizer) ([][]int32, []string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, badRequest("prompt", "prompt is required")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		ids, e := encodeText(text, tok)
		return [][]int32{ids}, []string{text}, e
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, badRequest("prompt", "prompt must be a string or an array, got %s", clip(raw))
	}
	if len(list) == 0 {
		return nil, nil, badRequest("prompt", "prompt is an empty array")
	}
	for i, item := range list { // json.Unmarshal would read a null as token 0
		if string(bytes.TrimSpace(item)) == "null" {
			return nil, nil, badRequest("prompt", "prompt item %d is null: want a string or a token id", i)
		}
	}
	var ids []int32
	if err := json.Unmarshal(raw, &ids); err == nil {
		ids, e := checkIDs(ids, tok)
		return [][]int32{ids}, nil, e
	}
	if len(list) > maxChoices { // a batch of prompts; one prompt of token ids may be long
		return nil, nil, badRequest("prompt", "prompt holds %d prompts, more than %d", len(list), maxChoices)
	}
	var texts []string
	if err := json.Unmarshal(raw, &texts); err == nil {
		prompts := make([][]int32, len(texts))
		for i, text := range texts {
			var e *apiError
			if prompts[i], e = encodeText(text, tok); e != nil {
				return nil, nil, e
			}
		}
		return prompts, texts, nil
	}
	var batch [][]int32
	if err := json.Unmarshal(raw, &batch); err != nil {
		return nil, nil, badRequest("prompt", "prompt must be a string, an array of strings, an array of token ids or an array of arrays of token ids, got %s", clip(raw))
	}
	for i, ids := range batch {
		if len(ids) == 0 {
			return nil, nil, badRequest("prompt", "prompt %d is an empty array of token ids", i)
		}
		if _, e := checkIDs(ids, tok); e != nil {
			return nil, nil, e
		}
	}
	return batch, nil, nil
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

func toInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
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
