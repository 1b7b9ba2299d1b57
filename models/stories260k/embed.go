// Package stories260k embeds the default model of tpslice: Andrej Karpathy's tinyllamas
// stories260K, a 260K-parameter Llama-2-architecture model trained on TinyStories with
// llama2.c, and its own 512-piece SentencePiece tokenizer tok512, both MIT-licensed
// (LICENSE, README.md). The bytes are llama2.c's formats as published: models.Llama2CFromBytes
// reads the checkpoint, tokenizer.FromLlama2CBytes the tokenizer. It imports nothing.
package stories260k

import _ "embed"

// Name is the model's name, by which the command line and the engine select it.
const Name = "stories260K"

// Checkpoint is stories260K.bin, llama2.c's legacy checkpoint format (dim 64, FFN 172, 5
// layers, 8 heads, 4 KV heads, vocab 512, context 512, shared classifier). Read-only.
//
//go:embed stories260K.bin
var Checkpoint []byte

// Tokenizer is tok512.bin, llama2.c's tokenizer format. Read-only.
//
//go:embed tok512.bin
var Tokenizer []byte
