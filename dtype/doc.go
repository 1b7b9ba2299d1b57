// Package dtype names the types of device memory and their traits: the element types
// (f32, bf16, f16), converted one element at a time exactly (widening to f32 is exact,
// narrowing rounds to nearest even; OCP FP8 e4m3 too, as a wire format, not a buffer
// type), and GGML's block types (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q5_0, Q5_1), which have no
// per-element size: each says how many values share a block and how many bytes the block
// takes (ggml's type_traits), so that buffers, rows and shards are counted in whole
// blocks. Package quant encodes and decodes the blocks. It is a leaf: every other package
// may import it.
package dtype
