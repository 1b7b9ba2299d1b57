package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
)

// ReadConversation reads a messages file (tpslice chat-template --messages): a JSON array
// of messages, or an object holding "messages" and optionally "tools", as a request body
// has them.
func ReadConversation(path string) (messages, tools json.RawMessage, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return nil, nil, errors.New("not valid JSON")
	}
	if len(b) > 0 && b[0] == '[' {
		return b, nil, nil
	}
	var body struct {
		Messages json.RawMessage `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(b, &body); err != nil || len(body.Messages) == 0 {
		return nil, nil, errors.New(`want a JSON array of messages or an object with "messages"`)
	}
	return body.Messages, body.Tools, nil
}
