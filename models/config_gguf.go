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
// config from its metadata (ConfigFromGGUF).
func OpenGGUF(path string) (*format.FileSource, Config, error) {
	gf, err := format.ParseGGUF(path)
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
	kvs := gf.Header.MetadataKV
	fail := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("gguf %s: %s", path, fmt.Sprintf(format, args...))
	}
	archName, err := ggufString(kvs, "general.architecture")
	if err != nil {
		return fail("%v", err)
	}
	arch, err := LookupArch(archName)
	if err != nil {
		return fail("general.architecture: %v", err)
	}
	cfg := Config{RopeLayout: arch.GGUFRope, RopeTheta: 10000, QKVBias: arch.QKVBias, QKNorm: arch.QKNorm}
	if arch.Name != "llama" {
		cfg.Arch = arch.Name
	}
	cfg.Name, _ = ggufString(kvs, "general.name")
	if cfg.Name == "" {
		cfg.Name = strings.TrimSuffix(filepath.Base(path), ".gguf")
	}
	key := func(k string) string { return arch.Name + "." + k } // the architecture's own keys
	for _, f := range []struct {
		key      string
		dst      *int
		required bool
	}{
		{key("embedding_length"), &cfg.Hidden, true},
		{key("block_count"), &cfg.Layers, true},
		{key("attention.head_count"), &cfg.Heads, true},
		{key("feed_forward_length"), &cfg.Intermediate, true},
		{key("context_length"), &cfg.ContextLength, true},
		{key("attention.head_count_kv"), &cfg.KVHeads, false},
		{key("attention.key_length"), &cfg.HeadDim, false},
		{key("vocab_size"), &cfg.Vocab, false},
	} {
		v, ok, err := ggufInt(kvs, f.key)
		if err != nil {
			return fail("%v", err)
		}
		if !ok && f.required {
			return fail("metadata key %s missing", f.key)
		}
		if ok {
			*f.dst = v
		}
	}
	for _, f := range []struct {
		key      string
		dst      *float64
		required bool
	}{
		{key("rope.freq_base"), &cfg.RopeTheta, false},
		{key("attention.layer_norm_rms_epsilon"), &cfg.RMSEps, true},
	} {
		v, ok, err := ggufFloat(kvs, f.key)
		if err != nil {
			return fail("%v", err)
		}
		if !ok && f.required {
			return fail("metadata key %s missing", f.key)
		}
		if ok {
			*f.dst = v
		}
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
	if v, ok, err := ggufInt(kvs, key("attention.value_length")); err != nil {
		return fail("%v", err)
	} else if ok && v != cfg.HeadDim {
		return fail("%s %d differs from the key length %d: not supported", key("attention.value_length"), v, cfg.HeadDim)
	}
	if v, ok, err := ggufInt(kvs, key("rope.dimension_count")); err != nil {
		return fail("%v", err)
	} else if ok && v != cfg.HeadDim {
		return fail("%s %d differs from the head dim %d: partial RoPE is not supported", key("rope.dimension_count"), v, cfg.HeadDim)
	}
	if cfg.Vocab == 0 {
		if kv, ok := kvs.Get("tokenizer.ggml.tokens"); ok && kv.ValueType == gguf.GGUFMetadataValueTypeArray {
			cfg.Vocab = int(min(kv.ValueArray().Len, math.MaxInt32))
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

func ggufString(kvs gguf.GGUFMetadataKVs, key string) (string, error) {
	kv, ok := kvs.Get(key)
	if !ok {
		return "", fmt.Errorf("metadata key %s missing", key)
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeString {
		return "", fmt.Errorf("metadata key %s holds a %v, want a string", key, kv.ValueType)
	}
	return kv.ValueString(), nil
}

// ggufInt reads a non-negative integer of any GGUF integer type.
func ggufInt(kvs gguf.GGUFMetadataKVs, key string) (int, bool, error) {
	kv, ok := kvs.Get(key)
	if !ok {
		return 0, false, nil
	}
	switch kv.ValueType {
	case gguf.GGUFMetadataValueTypeUint8, gguf.GGUFMetadataValueTypeUint16, gguf.GGUFMetadataValueTypeUint32,
		gguf.GGUFMetadataValueTypeUint64:
		v := gguf.ValueNumeric[uint64](kv)
		if v > math.MaxInt32 {
			return 0, false, fmt.Errorf("metadata key %s = %d out of range", key, v)
		}
		return int(v), true, nil
	case gguf.GGUFMetadataValueTypeInt8, gguf.GGUFMetadataValueTypeInt16, gguf.GGUFMetadataValueTypeInt32,
		gguf.GGUFMetadataValueTypeInt64:
		v := gguf.ValueNumeric[int64](kv)
		if v < 0 || v > math.MaxInt32 {
			return 0, false, fmt.Errorf("metadata key %s = %d out of range", key, v)
		}
		return int(v), true, nil
	}
	return 0, false, fmt.Errorf("metadata key %s holds a %v, want an integer", key, kv.ValueType)
}

// ggufFloat reads a number of any GGUF numeric type as float64 (a float32 is widened
// exactly).
func ggufFloat(kvs gguf.GGUFMetadataKVs, key string) (float64, bool, error) {
	kv, ok := kvs.Get(key)
	if !ok {
		return 0, false, nil
	}
	switch kv.ValueType {
	case gguf.GGUFMetadataValueTypeFloat32:
		return float64(kv.ValueFloat32()), true, nil
	case gguf.GGUFMetadataValueTypeFloat64:
		return kv.ValueFloat64(), true, nil
	}
	if kv.ValueType.IsNumeric() {
		return gguf.ValueNumeric[float64](kv), true, nil
	}
	return 0, false, fmt.Errorf("metadata key %s holds a %v, want a number", key, kv.ValueType)
}
