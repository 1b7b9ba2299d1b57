// Package stories260k embeds the default model of tpslice: Andrej Karpathy's tinyllamas
// stories260K, a 260K-parameter Llama-2-architecture model trained on TinyStories with
// llama2.c, and its own 512-piece SentencePiece tokenizer tok512, both MIT-licensed
// (LICENSE, README.md). The bytes are llama2.c's formats as published: models.Llama2CFromBytes
// reads the checkpoint, tokenizer.FromLlama2CBytes the tokenizer. It imports nothing.
package stories260k
