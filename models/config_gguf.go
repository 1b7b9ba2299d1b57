package models

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/tpslice/tpslice/models/format"
)

// OpenGGUF memory-maps a GGUF file and returns its tensors (format.OpenGGUF) and the model
// config from its metadata (ConfigFromGGUF). It parses the header without its large arrays
// (the vocabulary, the merges), which neither needs; OpenGGUFFile shares a full parse with
// the tokenizer.
func OpenGGUF(path string) (*format.FileSource, Config, error) {
	gf, err := format.ParseGGUFMetadata(path)
	if err != nil {
		return nil, Config{}, err
	}
	return OpenGGUFFile(path, gf)
}

// OpenGGUFFile is OpenGGUF for a header format.ParseGGUF read from path.
func OpenGGUFFile(path string, gf *gguf.GGUFFile) (*format.FileSource, Config, error) {
	cfg, err := configFromGGUF(path, gf)
	if err != nil {
		return nil, Config{}, err
	}
	src, err := format.OpenGGUF(path, gf)
	if err != nil {
		return nil, Config{}, err
	}
	return src, cfg, nil
}

// ConfigFromGGUF reads the model config from a GGUF file's metadata: general.architecture
// (llama, qwen2 or qwen3: see Arch, which gives the RoPE layout and the layers' optional
// tensors), then under that architecture's prefix (ARCH.): embedding_length, block_count,
// attention.head_count, attention.head_count_kv (default head_count),
// feed_forward_length, rope.freq_base (default 10000), attention.layer_norm_rms_epsilon,
// context_length, attention.key_length (default embedding_length/head_count); the vocab
// from ARCH.vocab_size, else the tokenizer.ggml.tokens array, else token_embd.weight;
// TiedEmbeddings when output.weight is absent. Large arrays are skipped, not read.
func ConfigFromGGUF(path string) (Config, error) {
	gf, err := format.ParseGGUFMetadata(path)
	if err != nil {
		return Config{}, err
	}
	return configFromGGUF(path, gf)
}

// configFromGGUF reads the metadata of a parsed file (ConfigFromGGUF).
func configFromGGUF(path string, gf *gguf.GGUFFile) (Config, error) {
	md := format.NewGGUFMeta(path, gf)
	fail := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("gguf %s: %s", path, fmt.Sprintf(format, args...))
	}
	archName, ok, err := md.String("general.architecture")
	if err != nil {
		return Config{}, err
	}
	if !ok {
		return Config{}, md.Missing("general.architecture")
	}
	arch, err := LookupArch(archName)
	if err != nil {
		return fail("general.architecture: %v", err)
	}
	cfg := Config{RopeLayout: arch.GGUFRope, RopeTheta: 10000, QKVBias: arch.QKVBias, QKNorm: arch.QKNorm}
	if arch.Name != "llama" {
		cfg.Arch = arch.Name
	}
	cfg.Name, _, _ = md.String("general.name") // only a label: a malformed one gives way to the file's name
	if cfg.Name == "" {
		cfg.Name = strings.TrimSuffix(filepath.Base(path), ".gguf")
	}
	key := func(k string) string { return arch.Name + "." + k } // the architecture's own keys
	const required, optional = true, false
	if err := readGGUFKeys(md, md.Int, []ggufKey[int]{
		{key("embedding_length"), &cfg.Hidden, required},
		{key("block_count"), &cfg.Layers, required},
		{key("attention.head_count"), &cfg.Heads, required},
		{key("feed_forward_length"), &cfg.Intermediate, required},
		{key("context_length"), &cfg.ContextLength, required},
		{key("attention.head_count_kv"), &cfg.KVHeads, optional},
		{key("attention.key_length"), &cfg.HeadDim, optional},
		{key("vocab_size"), &cfg.Vocab, optional},
	}); err != nil {
		return Config{}, err
	}
	if err := readGGUFKeys(md, md.Float, []ggufKey[float64]{
		{key("rope.freq_base"), &cfg.RopeTheta, optional},
		{key("attention.layer_norm_rms_epsilon"), &cfg.RMSEps, required},
	}); err != nil {
		return Config{}, err
	}
	if cfg.KVHeads == 0 {
		cfg.KVHeads = cfg.Heads
	}
	if cfg.HeadDim == 0 && cfg.Heads > 0 {
		if cfg.Hidden%cfg.Heads != 0 {
			return fail("%s %d is not a multiple of %s %d and %s is absent", key("embedding_length"), cfg.Hidden, key("attention.head_count"), cfg.Heads, key("attention.key_length"))
		}
		cfg.HeadDim = cfg.Hidden / cfg.Heads
	}
	if v, ok, err := md.Int(key("attention.value_length")); err != nil {
		return Config{}, err
	} else if ok && v != cfg.HeadDim {
		return fail("%s %d differs from the key length %d: not supported", key("attention.value_length"), v, cfg.HeadDim)
	}
	if v, ok, err := md.Int(key("rope.dimension_count")); err != nil {
		return Config{}, err
	} else if ok && v != cfg.HeadDim {
		return fail("%s %d differs from the head dim %d: partial RoPE is not supported", key("rope.dimension_count"), v, cfg.HeadDim)
	}
	if cfg.Vocab == 0 {
		if cfg.Vocab, _, err = md.ArrayLen("tokenizer.ggml.tokens"); err != nil {
			return Config{}, err
		}
	}
	if cfg.Vocab == 0 {
		if ti, ok := gf.TensorInfos.Get(TokenEmbd); ok && len(ti.Dimensions) >= 2 {
			cfg.Vocab = int(min(ti.Dimensions[1], math.MaxInt32))
		}
	}
	if cfg.Vocab == 0 {
		return fail("vocab size: no %s, tokenizer.ggml.tokens or %s", key("vocab_size"), TokenEmbd)
	}
	_, hasOutput := gf.TensorInfos.Get(Output)
	cfg.TiedEmbeddings = !hasOutput
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("gguf %s: %w", path, err)
	}
	return cfg, nil
}

// ggufKey is a metadata key of the config and the field it sets; an optional key that is
// absent leaves the field as it is (its default).
type ggufKey[T any] struct {
	key      string
	dst      *T
	required bool
}

// readGGUFKeys reads every key with get (a format.GGUFMeta getter of md) into its field.
func readGGUFKeys[T any](md format.GGUFMeta, get func(string) (T, bool, error), keys []ggufKey[T]) error {
	for _, k := range keys {
		v, ok, err := get(k.key)
		switch {
		case err != nil:
			return err
		case ok:
			*k.dst = v
		case k.required:
			return md.Missing(k.key)
		}
	}
	return nil
}
