// Package perf predicts what a decode step costs on a GPU node, from the schedule the
// engine runs: it builds the model shape-only (no weight memory, so any size fits on this
// machine), captures the decode graph the engine would replay, and prices every kernel of
// a rank's graph on a hardware profile (hw) — a roofline with stated efficiencies for
// compute kernels, the collective model for collectives — then walks the graph's
// dependencies to the step time. It also says whether the weights and the KV cache fit a
// GPU.
//
// Collectives are priced through one entry: a request (Collective: op, algorithm,
// protocol, ranks, hosts, bytes) against the costs of tpslice's or NCCL's collectives on a
// profile (CostsOf), a rate per algorithm and protocol as NCCL's tuner indexes its tables,
// applied to the algorithm's shape from comm's registry (comm.Algo.Cost). The rates come
// from the profile's calibration to published measurements, or, on a profile without one,
// from its α and β alone: the idealised α-β model of DESIGN.md. Costs.Time prices a
// request, Costs.Choose picks its algorithm and protocol, Offered lists what a profile
// offers, and ModelTable is the selection table the model gives (what
// `--select model:PROFILE` runs). A TP group may span several hosts (Collective.Hosts,
// Config.Hosts): its hops across hosts are priced with the profile's InterHost network.
//
// Sweep predicts a configuration over TP degrees and batch sizes; NewPlan reports the sweep
// (plan's JSON rows) and Plan.WriteTable prints it as plan's table, with the fastest TP
// degree per batch and, where rows span hosts, whether crossing hosts pays.
//
// A low-precision all-reduce wire (Config.AllReduceWire) is priced through the bytes its
// kernels declare; its encoding runs in registers on a GPU and is not priced.
//
// PriceNUMA prices the other side of placement: a decode step's weight reads on a
// two-socket CPU server (hw.TwoSocket) with each rank's weights on its own node, interleaved,
// or on one node, a roofline over each socket's memory and the link between them.
//
// perf owns the efficiencies and all the pricing, collectives included; the kernels'
// costs (bytes, FLOPs, class) come from the kernels themselves (device.Work), so the model
// cannot drift from the code it models.
package perf
