// Package quant owns GGML's block-quantized weight types (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K,
// Q5_0, Q5_1): their block layouts as llama.cpp's ggml-common.h defines them, a plain
// reference dequantizer per type (ggml-quants.c's order of float operations), quantizers
// for quantizing f32/f16/bf16 weights on load and for writing files (llama.cpp's reference
// quantizers, byte for byte), the layout a matrix's rows take on a device (Pack), the
// quantization of activation rows to 16-bit integers that the dot products take (Acts),
// and the dot-product kernels themselves: exact integer products of weights and
// activations, scaled and summed in f32 in one fixed order, in AVX-512 or AVX2 assembly
// chosen by the CPU at run time, and portable Go.
//
// Data enters as GGML block bytes (a GGUF tensor's rows) or as f32 values, and leaves as
// f32 values (Dequantize, DequantizeRow) or as the f32 outputs of a linear layer (Dot).
// Block types and their sizes are package dtype's; this package knows nothing of models or
// devices.
package quant
