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
