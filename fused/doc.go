// Package fused owns the fused collectives of a decoder layer: the all-reduce of a
// row-parallel output fused with the residual add and the next RMSNorm, one variant per
// all-reduce algorithm (one-shot, two-shot, NVLS, tree), the sequence-parallel variant
// that decomposes the all-reduce (reduce-scatter by tokens, residual + RMSNorm on each
// rank's 1/n of the rows, all-gather of the normalized and residual rows: Megatron-SP,
// TensorRT-LLM's and vLLM's fused RS + norm + AG), plus the unfused pair (all-reduce, then
// a separate residual + RMSNorm kernel) as reference and fallback. The variants are built
// on comm's registered buffers, barriers and tree exchange (comm.Collective). Auto picks
// by a fused selection Table when the caller has one (comm's BucketTable of Variants, per
// world size and token bucket, for one hidden size; Autotune measures the variants on the
// node and keeps the fastest whose bits match the rank-order reference loop, TunedTable
// caches it on disk under a fingerprint, with comm.LoadOrTune's policy), else the fused
// form of the all-reduce comm would run (Select).
//
// Data enters as a rank's partial output [tokens, hidden] and the residual stream on
// device buffers; it leaves as the updated residual (residual + Σ partials) and the
// normalized activations for the next block, bitwise the same on every rank and as the
// unfused pair over the same all-reduce: one-shot, two-shot, NVLS and sequence-parallel sum
// in rank order (so they agree with each other too, and the sequence-parallel variant with
// its own unfused pair over comm's direct reduce-scatter and all-gather), the tree in its
// own order, and the norm is vec.AddRMSNorm for all of them. On the communicator's
// low-precision wire (comm.Config.Wire) one-shot and two-shot stage and reduce through it
// and keep matching the unfused pair over the same wire bit for bit; NVLS, the tree and the
// sequence-parallel variant refuse it; on fp8, rows that are not whole blocks of scale run
// unfused under Auto.
package fused
