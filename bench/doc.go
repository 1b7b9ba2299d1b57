// Package bench holds what tpslice's benchmarks share: latency summaries (Stats, as numpy
// computes percentiles) and whether progress may redraw its line (IsTerminal). The
// benchmarks are its subpackages: serving, an OpenAI load generator against a running
// server, and decode, decode latency per TP degree and batch measured on an engine. The
// CLI (cmd/tpslice) parses their flags and prints their reports; tests and other programs
// call them directly. It imports only the standard library.
package bench
