// Package format reads and writes checkpoint files without knowing the model inside them:
// GGUF, Hugging Face safetensors (single or sharded) and raw layouts such as llama2.c's,
// memory-mapped so that each tensor-parallel rank copies only its shard.
//
// A Source is a set of named tensors, each with a TensorInfo (shape [rows, cols] = [out,
// in] for matrices, and a dtype: f32, bf16, f16 or one of GGML's block types). Source.Read
// copies a Region, a row range and a column range, of one tensor into a Dest (a []float32,
// a []uint16 of bf16/f16 bits, GGML blocks, or a device.Buffer), converting through
// packages dtype and quant: exactly where that is exact (widening, dequantizing, copying
// whole blocks), quantizing into a block type otherwise. CheckRead is the argument check
// every Source shares.
//
// FileSource is the Source over mapped files: OpenGGUF (tensors of a header ParseGGUF read
// once for every reader of the file: weights, config, tokenizer, chat template),
// OpenSafetensors (names renamed by the caller's Rename, a model's canonical names), and
// OpenRaw / RawFromBytes for formats whose header implies the tensors' offsets (the caller's
// Layout reads it). GGUFMeta is the one reader of a GGUF header's typed metadata (checked
// types, errors naming the file, the key and the type found and wanted). What the metadata
// means (a model's config, its tensor names, its tokenizer) belongs to the packages above:
// models reads a Llama config from GGUF keys, config.json or a llama2.c header.
//
// WriteGGUF (metadata as GGUFKV, block types included) and WriteSafetensors write files the
// readers read back, for tests and tools.
package format
