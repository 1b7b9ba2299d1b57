// Package serving is tpslice's OpenAI load generator, as vLLM's benchmark_serving: it
// streams completions to a running server (tpslice serve or any OpenAI-compatible one)
// at a request rate and concurrency, optionally for a soak of a given duration with
// client cancellations, and reports throughput, TTFT, TPOT, ITL and end-to-end latency,
// the server's scheduler counters and, over a soak, its memory and goroutines from
// /metrics. It speaks HTTP only, so it measures the server as a client sees it.
//
// Run takes Options and returns a Report; the CLI's bench-serve parses its flags into
// Options and prints the Report.
package serving
