// Package decode is tpslice's decode benchmark, as vLLM's benchmark_latency: for each TP
// degree it loads a model onto an engine and, for each batch size, hands the engine every
// request in one call (engine.GenerateBatch), so the batch decodes as one; it reports
// TTFT and the prefill rate (prompt tokens per second, llama-bench's pp), the per-token
// latency percentiles and throughput while the whole batch decodes (its tg), and where a
// decode step goes: rank 0's kernels by op class and collective, from a device.Tracer
// (trace.go), with the share of collective time spent waiting on peers from comm's flight
// records. Under --executor mp (engine.Config.Processes) rank 0 runs in a worker process:
// the same tracer runs there as an engine.RankProbe (probe.go) and sends back the row.
//
// Run takes Options and returns a Report; the CLI's bench parses its flags into Options,
// prints the Report as JSON or as its table (WriteTable) and plots it.
package decode
