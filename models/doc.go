// Package models describes Llama-family models and reads their weights so that each
// tensor-parallel rank loads only its shard.
//
// A Config holds a model's shape (hidden size, layers, heads, KV heads, FFN width, vocab,
// RoPE base, layout and scaling, RMSNorm epsilon) and its architecture's traits as data
// (Arch: Llama 2/3/3.1 and Mistral, Qwen2's q/k/v biases, Qwen3's per-head q/k norm, Llama
// 3.1's RoPE frequency factors; one decoder runs them all). It comes from a preset
// (Preset, Presets), from a GGUF file's general.architecture and ARCH.* metadata
// (ConfigFromGGUF), from a Hugging Face config.json (ConfigFromHF) or from a llama2.c
// checkpoint's header (OpenLlama2C).
//
// Weights enter through a format.Source (package format reads the files: GGUF,
// safetensors, raw layouts; this package says what they mean) under canonical GGUF names
// (token_embd.weight, blk.N.attn_q.weight, …, output.weight; CanonicalName maps Hugging
// Face's). Column-parallel layers read row ranges, row-parallel layers read column ranges
// (whole blocks of a quantized type: a shard whose columns cut blocks holds the blocks it
// touches, see Llama.LoadNotes). Open picks the format by path: a GGUF file (OpenGGUF:
// tensors and config from one parsed header), a Hugging Face directory or safetensors
// file (config.json beside it), a llama2.c checkpoint from a file or from memory
// (OpenLlama2C, Llama2CFromBytes: the embedded default model of package stories260k).
// NewDummy makes deterministic dummy weights addressable by tensor, row and column block,
// so a shard read equals the same slice of a full read.
//
// GGUF checkpoints keep llama.cpp's RoPE layout (Q and K rows permuted so that RoPE rotates
// adjacent pairs); safetensors keep Hugging Face's (rotation of halves). Nothing is
// un-permuted at load time: Config.RopeLayout records the layout for the RoPE kernel, and
// PermuteQKToAdjacent / PermuteQKToHalfSplit convert between them where a tool must.
//
// Llama runs the TP decoder on a tp.Group (Forward, CaptureDecode). Built ShapeOnly it holds
// no weight memory and captures the same decode graph, for performance models of models
// larger than this machine.
//
// WriteGGUF (a config's metadata and the tensors, through format.WriteGGUF) and
// WriteHFConfig write checkpoints the loaders read back, for tests and tools. The tokenizers live in models/tokenizer.
package models
