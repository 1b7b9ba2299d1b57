// Command peergguf writes a preset model (its deterministic dummy weights, the ones
// `tpslice --model NAME --seed S` runs) and its synthetic vocabulary as a GGUF file that
// llama.cpp loads, so that llama-bench and llama-server measure the same model on the same
// bytes as tpslice (../shared/PEERS.md). Matrices are stored as --dtype (f32, f16, bf16 or a
// block type tpslice quantizes to llama-quantize's bytes); for llama.cpp's mixed types
// (Q4_K_M) write f16 and run llama-quantize on it.
//
//	go run ./bench/peergguf --model medium --dtype f16 -o medium-f16.gguf
//
// --printable-bytes retypes the byte tokens as normal ones, for llama-server, which ends a
// stream whose text is not valid UTF-8.
package main
