package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
)

// The wire types of the responses, field for field as OpenAI (and vLLM) send them.

// usage counts the tokens of one request.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func newUsage(prompt, completion int) *usage {
	return &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// completion is the body of a /v1/completions response (object "text_completion"), and
// with Stream set, one chunk of its stream (the same object name, as OpenAI sends it).
type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   json.RawMessage    `json:"usage,omitempty"` // an object, null (streamed, usage asked for) or absent
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`      // null unless asked for
	FinishReason *string             `json:"finish_reason"` // null until the last chunk
}

// completionLogprobs are a completion choice's logprobs (or a chunk's part of them), one
// entry per token in each list: top_logprobs maps the most likely tokens' texts, and the
// sampled one's, to their logprobs; text_offset is where each token's text starts in the
// choice's text.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// chatCompletion is the body of a /v1/chat/completions response (object "chat.completion").
type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      chatMessage   `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"` // null unless asked for
	FinishReason string        `json:"finish_reason"`
}

// chatLogprobs are a chat choice's logprobs (or a chunk's part of them).
type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
	Refusal *string            `json:"refusal"` // always null
}

// chatTokenLogprob is one output token's logprob, with its text's UTF-8 bytes, and the
// most likely tokens' at its position.
type chatTokenLogprob struct {
	chatTopLogprob
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// chatMessage is the assistant's message in a response.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatChunk is one Server-Sent Event of a streamed chat completion (object
// "chat.completion.chunk").
type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   json.RawMessage   `json:"usage,omitempty"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// chatDelta is what a chunk adds to the message: the role in the first chunk, content in
// the others, nothing in the last.
type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// modelList is the body of GET /v1/models.
type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"` // vLLM's extension: the context length
}

// usageJSON is the usage field of a streamed chunk: null in every chunk but the last when
// the client asked for usage (OpenAI's stream_options.include_usage), absent otherwise.
func usageJSON(u *usage, asked bool) json.RawMessage {
	if !asked {
		return nil
	}
	if u == nil {
		return json.RawMessage("null")
	}
	b, _ := json.Marshal(u)
	return b
}

// newID returns a response id such as "cmpl-3f2a…" (prefix "chatcmpl-" for chat).
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b[:])
}

func ptr[T any](v T) *T { return &v }
