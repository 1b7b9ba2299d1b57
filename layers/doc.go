// Package layers owns the model kernels and the tensor-parallel layers built from them:
// column/row-parallel linear, vocab-parallel embedding and LM head, RoPE, GQA attention over
// a paged KV cache, SwiGLU MLP and RMSNorm.
package layers
