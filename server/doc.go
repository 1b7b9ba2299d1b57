// Package server is tpslice's OpenAI-compatible HTTP API, on fasthttp, over one engine.
//
// Requests enter as JSON on POST /v1/completions and /v1/chat/completions; the server
// checks them (errors as OpenAI sends them: {"error": {"message", "type", "param",
// "code"}} with the status), renders chat messages with the model's Jinja chat template
// (as Hugging Face transformers renders it: see ChatTemplate), tokenizes, admits them
// under a bound on waiting requests, and calls engine.Generate (engine.GenerateEach for a
// request's several choices: n of them, or a batch of prompts), which ends a sequence at
// EOS or an end-of-turn token. Parameters follow OpenAI's API reference with vLLM's
// extras (request.go); one not implemented is a 400 naming it, never ignored. vLLM's POST
// /tokenize and /detokenize show the ids a prompt or a conversation becomes, and the text
// of ids.
// Tokens leave as one JSON body or as Server-Sent Events (stream: true), chunk for chunk
// as OpenAI and vLLM send them, ending with "data: [DONE]". A client that leaves cancels
// its generation, which frees its KV blocks: a stream finds it when a write fails, a
// non-streaming request by watching the connection (watchPeer); a client that stops
// reading counts as gone once a write makes no progress for WriteTimeout. Past
// MaxConnections, connLimiter keeps /health answering and refuses the rest with the API's
// JSON 503. The log redacts credentials (redactingWriter). GET /v1/models, /health and
// /metrics (Prometheus: requests, time to first token, time per output token, running and
// waiting requests, KV blocks, collective calls and bytes by algorithm) say what the
// server is doing. Shutdown stops accepting and lets streams finish, or ends them with a
// final event.
//
// tpslice chat-template renders a conversation offline as the server would:
// ReadConversation reads its messages file, ModelChatTemplate finds a model's template and
// its BOS and EOS text.
//
// Nothing here knows about kernels: the engine is the only way down.
package server
