// Package collective is tpslice's collective benchmark, as nccl-tests: an all-reduce,
// reduce-scatter or all-gather (Op) over a range of message sizes, every algorithm and
// protocol of comm measured on a simulated node of the device runtime, interleaved round
// by round so that the machine's noise falls on all of them alike, each keeping its best
// round; with Check, each result's wrong elements against a float64 reference (or, on a
// compressed wire, its error against the exact wire). Sizes and bus bandwidth follow
// nccl-tests. Auto's choice per size comes from the selector it installs: a table tuned on
// this node once and cached, vLLM's rule, or a GPU profile's cost model.
//
// Measure takes Options and returns a Report; MeasureProcesses measures the same with a
// worker process per rank (package executor; WorkerJob is the workers' side, the job
// JobName the CLI registers); Price takes ModelOptions and returns the same Report priced by
// perf's collective model for a GPU profile instead, nothing measured.
// The CLI's allreduce-bench parses its flags into either (with Op's Algos, Sizes and
// Choices, and WireAlgos on a compressed wire) and prints the Report as JSON or as its
// table (Report.WriteTable).
package collective
