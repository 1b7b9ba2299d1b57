package models

import (
	"fmt"

	"github.com/tpslice/tpslice/models/format"
)

// WriteGGUF writes a GGUF v3 file that OpenGGUF reads back (format.WriteGGUF):
// general.architecture = "llama", general.name and the llama.* keys of cfg (RopeTheta and
// RMSEps stored as float32), the extra entries (a tokenizer's, tokenizer.GGUFMetadata),
// then the tensors. Q and K rows are written as given, and a GGUF reader takes them to be
// in the adjacent-pairs RoPE layout.
func WriteGGUF(path string, cfg Config, tensors []format.Tensor, extra ...format.GGUFKV) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	u := func(key string, v int) format.GGUFKV { return format.GGUFKV{Key: key, Value: uint32(v)} }
	f := func(key string, v float64) format.GGUFKV { return format.GGUFKV{Key: key, Value: float32(v)} }
	meta := []format.GGUFKV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.name", Value: cfg.Name},
		u("llama.context_length", cfg.ContextLength),
		u("llama.embedding_length", cfg.Hidden),
		u("llama.block_count", cfg.Layers),
		u("llama.feed_forward_length", cfg.Intermediate),
		u("llama.attention.head_count", cfg.Heads),
		u("llama.attention.head_count_kv", cfg.KVHeads),
		u("llama.attention.key_length", cfg.HeadDim),
		u("llama.attention.value_length", cfg.HeadDim),
		u("llama.rope.dimension_count", cfg.HeadDim),
		u("llama.vocab_size", cfg.Vocab),
		f("llama.rope.freq_base", cfg.RopeTheta),
		f("llama.attention.layer_norm_rms_epsilon", cfg.RMSEps),
	}
	return format.WriteGGUF(path, append(meta, extra...), tensors)
}
