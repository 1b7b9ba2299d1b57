// Package server owns the OpenAI-compatible HTTP API on fasthttp: completions and chat
// completions with SSE streaming, metrics, limits.
package server
