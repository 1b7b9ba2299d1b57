// Package bench holds what tpslice's benchmarks share: latency summaries (Stats, as numpy
// computes percentiles) and whether progress may redraw its line (IsTerminal). The
// benchmarks are its subpackages: serving, an OpenAI load generator against a running
// server; decode, decode latency per TP degree and batch measured on an engine; and
// collective, the all-reduce family over message sizes as nccl-tests measures it. The CLI
// (cmd/tpslice) parses their flags and prints their reports; tests and other programs call
// them directly. Their errors name the CLI flag behind a bad option, so that the CLI passes
// them on as they are. It imports only the standard library.
package bench
