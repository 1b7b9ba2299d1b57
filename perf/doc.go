// Package perf predicts what a decode step costs on a GPU node, from the schedule the
// engine runs: it builds the model shape-only (no weight memory, so any size fits on this
// machine), captures the decode graph the engine would replay, and prices every kernel of
// a rank's graph on a hardware profile (hw) — a roofline with stated efficiencies for
// compute kernels, the comm cost model for collectives with the algorithm the selector
// picked at that call site — then walks the graph's dependencies to the step time. It
// also says whether the weights and the KV cache fit a GPU.
//
// perf owns the efficiencies and the pricing; the kernels' costs (bytes, FLOPs, class)
// come from the kernels themselves (device.Work), so the model cannot drift from the
// code it models.
package perf
