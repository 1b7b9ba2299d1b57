// Package collective is tpslice's collective benchmark, as nccl-tests: an all-reduce,
// reduce-scatter or all-gather (Op) over a range of message sizes, every algorithm and
// protocol of comm measured on a simulated node of the device runtime, interleaved round
// by round so that the machine's noise falls on all of them alike, each keeping its best
// round; with Check, each result's wrong elements against a float64 reference (or, on a
// compressed wire, its error against the exact wire). Sizes and bus bandwidth follow
// nccl-tests. Auto's choice per size comes from the selector it installs: a table tuned on
// this node once and cached, vLLM's rule, or a GPU profile's cost model.
//
// Measure takes Options and returns a Report; the CLI's allreduce-bench parses its flags
// into Options (with Op's Algos, Sizes and Choices), prices the same Report from perf's
// model with --model, and prints it.
package collective
