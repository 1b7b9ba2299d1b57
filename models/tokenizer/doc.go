// Package tokenizer owns text ↔ token-id conversion for the models tpslice serves: the
// SentencePiece BPE of Llama 1/2 vocabularies (with byte fallback) and the byte-level BPE of
// GPT-2 style vocabularies (GPT-2, Llama 3, Qwen2, DeepSeek, Falcon, StarCoder, … each with
// its pre-tokenizer regexes, chosen by GGUF tokenizer.ggml.pre as llama.cpp chooses them),
// both reproducing llama.cpp's tokenizers id for id.
//
// Data enters as a vocabulary file: FromGGUF reads the tokenizer.ggml.* metadata of a GGUF
// file (vocab-only or a full model, read with gguf-parser-go; tensors are never touched),
// FromHFTokenizerJSON reads a Hugging Face tokenizer.json, FromLlama2C (and FromLlama2CBytes)
// reads a tokenizer.bin of Karpathy's llama2.c, and Load picks one by content or name.
// It leaves as a *Tokenizer, immutable and safe for concurrent use, whose Encode turns text
// into ids (Tokenize also parses control-token text such as "<|eot_id|>", llama.cpp's
// parse_special), Decode turns ids into text with llama.cpp's detokenizer rules, and
// NewStream returns a per-sequence incremental detokenizer that only ever emits complete
// UTF-8 (NewStreamAfter one that continues a prompt, whose text a completion extends).
//
// The files hold one idea each: tokenizer.go (the type, special-token fragments, Decode),
// spm.go (SentencePiece merges), bpe.go (byte-level BPE merges and the byte↔rune map),
// pretokenize.go (pre-tokenizer stages and character classes), pretokenize_gpt2.go and
// pretokenize_llama3.go (the GPT-2, Llama 3 and Qwen2 regexes by hand),
// pretokenize_run.go (the single-class regexes of deepseek, falcon, starcoder … by hand),
// pretokenize_regex.go (any other regex, through regexp2), pretokenize_types.go (the
// tokenizer.ggml.pre types and their regexes), gguf.go, hfjson.go, hfjson_pretokenizer.go
// and llama2c.go (loaders), stream.go (incremental detokenizer).
package tokenizer
