// Package perf predicts what a decode step costs on a GPU node, from the schedule the
// engine runs: it builds the model shape-only (no weight memory, so any size fits on this
// machine), captures the decode graph the engine would replay, and prices every kernel of
// a rank's graph on a hardware profile (hw) — a roofline with stated efficiencies for
// compute kernels; for collectives, with the algorithm the selector picked at that call
// site, the profile's calibration to published measurements (per-algorithm fixed costs and
// link efficiencies, NCCL's ring per protocol), or the idealised α-β model (ModelTime) on a
// profile without one, tpslice's ring and tree under each protocol (comm.Proto) scaled as
// NCCL's tuner has it (proto.go) — then walks the graph's dependencies to the step time. It
// also says whether the weights and the KV cache fit a GPU. A TP group may span several
// hosts (Config.Hosts): collectives are then priced with the profile's InterHost network
// for their hops across hosts (CollectiveTimeHosts, ModelTableHosts), the two-level
// all-reduce among them, and NCCL's ring as its tuner prices rings across nodes
// (NCCLTimeHosts).
//
// Reduce-scatter and all-gather are priced alike (each rank's slice, n-1 of them), and the
// fused sequence-parallel all-reduce + RMSNorm as two-shot's kernel with its residual rows
// gathered too (SeqParallelTime).
//
// A low-precision all-reduce wire (Config.AllReduceWire) is priced through the bytes its
// kernels declare; its encoding runs in registers on a GPU and is not priced.
//
// perf owns the efficiencies and all the pricing, collectives included, and the selection
// table a model gives (ModelTable, what `--select model:PROFILE` runs); the kernels' costs (bytes, FLOPs, class)
// come from the kernels themselves (device.Work), so the model cannot drift from the
// code it models.
package perf
