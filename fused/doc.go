// Package fused owns the fused collectives of a decoder layer: the all-reduce of a
// row-parallel output fused with the residual add and the next RMSNorm, one variant per
// all-reduce algorithm (one-shot, two-shot, NVLS, tree) plus the unfused pair (all-reduce,
// then a separate residual + RMSNorm kernel) as reference and fallback. The variants are
// built on comm's registered buffers, barriers and tree exchange (comm.Collective).
//
// Data enters as a rank's partial output [tokens, hidden] and the residual stream on
// device buffers; it leaves as the updated residual (residual + Σ partials) and the
// normalized activations for the next block, bitwise the same on every rank and as the
// unfused pair over the same all-reduce: one-shot, two-shot and NVLS sum in rank order (so
// they agree with each other too), the tree in its own order, and the norm is
// vec.AddRMSNorm for all of them. On the communicator's low-precision wire
// (comm.Config.Wire) one-shot and two-shot stage and reduce through it and keep matching
// the unfused pair over the same wire bit for bit; NVLS and the tree refuse it; on fp8,
// rows that are not whole blocks of scale run unfused under Auto.
package fused
