// Package layers owns the model kernels and the tensor-parallel layers built from them:
// column/row-parallel linear, vocab-parallel embedding and LM head, RoPE, GQA attention over
// a paged KV cache, SwiGLU MLP and RMSNorm.
//
// The kernels are plain Go functions over host slices (device buffer views: Float32s for
// activations; a weight Matrix is its row bytes and its dtype); TP layers launch them on
// device streams, giving each SM a block of the work:
//
//   - Linear / LinearRows: y = x·Wᵀ for an [out, in] Matrix in f32, bf16 or f16, f32
//     activations and accumulation, M = 1 (GEMV) or M rows of a batch or prompt (GEMM:
//     register-blocked AVX-512 tiles of weights widened once for every row), output rows
//     [o0, o1).
//   - RoundBF16, LinearBF16DotRows: the same for bf16 weights with llama.cpp's arithmetic,
//     activations rounded to bf16 and VDPBF16PS (two bf16 products per f32 lane, 16 partial
//     sums; dpbf16 is its measured reference), on CPUs with AVX512_BF16; the model's
//     opt-in BF16Dot.
//   - LinearQuantRows: the same for a Matrix of a GGML block type (Q8_0, Q4_0, Q4_K, Q5_K,
//     Q6_K, Q5_0, Q5_1), its activations quantized to 16-bit integers by package quant,
//     whose kernels it runs (for M rows on AVX-512 VNNI CPUs, a GEMM: each group of weight
//     rows made ready once for four rows at a time).
//   - RMSNorm, RMSNormResidual: row-wise RMSNorm, and the unfused residual add + RMSNorm that
//     the fused all-reduce replaces.
//   - RopeTable.Apply: RoPE in place on q and k, adjacent pairs (GGUF) or half split (HF),
//     from a cos/sin table computed in float64 and rounded to f32.
//   - PagedKVCache (Write, Gather) and Attention / AttentionRange: causal GQA attention for
//     decode, prefill and mixed batches (Batch: a position and a block table per token).
//     A new cache's pages are backed at once, as a GPU allocation is, so no step faults
//     them in.
//   - SwiGLU, SwiGLUMerged: silu(gate)·up.
//   - Embedding: the lookup of one vocab shard (quantized rows dequantized), zeros for ids
//     other shards own.
//   - Argmax, TopK, MergeTopK: sampling candidates over a logits shard and their merge,
//     ties to the lowest id.
//   - RowSampler (Apply, Winner, Propose), Philox4x32, Gumbel: a rank's part of sampling a
//     row on its shard: the logit adjustments, then the Gumbel-max winner under noise keyed
//     by (seed, position, global token id), or the best candidates and the softmax terms.
//     The winner takes the noise's logarithms only of the tokens whose draw leaves them a
//     chance against the best score so far, exactly.
//
// Every reduction has one fixed order, stated in the kernel's doc comment as a reference
// loop: Lanes (8) partial sums, element i into partial sum i%8 in increasing i, combined as
// ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7)), the tree of an AVX2 horizontal add. Linear and
// LinearRows fuse each product into its partial sum (fma32, a float32 fused multiply-add:
// one rounding, and the instruction the GEMM's peak is counted in); the other reductions
// (attention's dot products, RMSNorm's squares) round each product to f32 before adding it
// (reduce.go). The order of one output depends only on its own inputs, so the kernels are
// deterministic and batch-invariant: a GEMM row is bitwise the GEMV of that row, an
// attention token gives the same bits alone or in any batch, and any split of the work over
// workers gives the same bits. Exponentials use the package's own f32 exp (Cephes' expf,
// within 2 ulps), the same on every machine.
//
// Exported entry points validate shapes and return errors naming the sizes (never panic on
// a caller's bad shape), then run unchecked inner loops. The hot paths do not allocate:
// scratch is passed in (PagedKVCache.AttentionScratchLen) or lives on the stack. Tests check every
// kernel bit for bit against a plain reference loop (and fuzz it where shapes vary);
// benchmarks report GEMV in GB/s of weight bytes.
package layers
