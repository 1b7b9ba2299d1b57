package models

import (
	"fmt"
	"math"
	"math/bits"
	"path/filepath"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/tpslice/tpslice/dtype"
)

// OpenGGUF memory-maps a GGUF file (v2 or v3, little-endian, one file) and returns its
// tensors under their GGUF names, with shapes as [rows, cols] (GGUF lists dimensions
// innermost first: ne[0] is the number of columns), and the model config from its
// metadata (ConfigFromGGUF). Tensors must be F32, F16, BF16 or one
// of the block types Q8_0, Q4_0, Q4_K, Q5_K, Q6_K (kept as GGML's blocks); any other type
// is an error naming the tensor and the type.
func OpenGGUF(path string) (*FileSource, Config, error) {
	gf, err := ParseGGUF(path)
	if err != nil {
		return nil, Config{}, err
	}
	return OpenGGUFFile(path, gf)
}

// ParseGGUF reads a GGUF file's header (its metadata and tensor table) once for all its
// readers: the weights and config (OpenGGUFFile), the tokenizer (tokenizer.FromGGUFFile)
// and the engine's end-of-generation keys. Errors name the file, and a file that is not a
// GGUF one says what it looks like.
func ParseGGUF(path string) (*gguf.GGUFFile, error) { return parseGGUF(path, false) }

// OpenGGUFFile is OpenGGUF for a header ParseGGUF read from path.
func OpenGGUFFile(path string, gf *gguf.GGUFFile) (*FileSource, Config, error) {
	cfg, err := configFromGGUF(path, gf)
	if err != nil {
		return nil, Config{}, err
	}
	s := newFileSource("gguf", path)
	f, err := s.mapFile(path)
	if err != nil {
		return nil, Config{}, err
	}
	if err := s.addGGUFTensors(f, gf); err != nil {
		_ = s.Close()
		return nil, Config{}, err
	}
	s.seal()
	return s, cfg, nil
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
	gf, err := parseGGUF(path, true)
	if err != nil {
		return Config{}, err
	}
	return configFromGGUF(path, gf)
}

// parseGGUF runs gguf-parser-go, turning its panics on malformed input into errors.
func parseGGUF(path string, skipLarge bool) (gf *gguf.GGUFFile, err error) {
	defer func() {
		if r := recover(); r != nil {
			gf, err = nil, fmt.Errorf("gguf %s: malformed file: %v", path, r)
		}
		if err != nil && gf == nil {
			if d := diagnoseGGUF(path); d != nil {
				err = fmt.Errorf("%w; %v", err, d)
			}
		}
	}()
	if gguf.IsShardGGUFFilename(filepath.Base(path)) {
		return nil, fmt.Errorf("gguf %s: split GGUF files are not supported; merge them with llama-gguf-split --merge", path)
	}
	var opts []gguf.GGUFReadOption
	if skipLarge {
		opts = append(opts, gguf.SkipLargeMetadata())
	}
	gf, err = gguf.ParseGGUFFile(path, opts...)
	if err != nil {
		return nil, fmt.Errorf("gguf %s: %w", path, err)
	}
	if gf.Header.Magic != gguf.GGUFMagicGGUFLe {
		return nil, fmt.Errorf("gguf %s: big-endian GGUF is not supported", path)
	}
	return gf, nil
}

// ggmlTypes maps the GGML tensor types this package reads to dtypes (ggml.h's numbering);
// never written.
var ggmlTypes = map[gguf.GGMLType]dtype.DType{
	gguf.GGMLTypeF32:  dtype.F32,
	gguf.GGMLTypeF16:  dtype.F16,
	gguf.GGMLTypeBF16: dtype.BF16,
	gguf.GGMLTypeQ8_0: dtype.Q8_0,
	gguf.GGMLTypeQ4_0: dtype.Q4_0,
	gguf.GGMLTypeQ4_K: dtype.Q4_K,
	gguf.GGMLTypeQ5_K: dtype.Q5_K,
	gguf.GGMLTypeQ6_K: dtype.Q6_K,
}

// ggufSupported names the GGML types ggmlTypes holds, for errors.
const ggufSupported = "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K"

// ggufDType maps a GGML tensor type to its dtype.
func ggufDType(t gguf.GGMLType) (dtype.DType, bool) {
	d, ok := ggmlTypes[t]
	return d, ok
}

// ggmlType is the GGML type number of dtype t, what WriteGGUF stores.
func ggmlType(t dtype.DType) uint32 {
	for g, d := range ggmlTypes {
		if d == t {
			return uint32(g)
		}
	}
	return uint32(gguf.GGMLTypeF32)
}

func (s *FileSource) addGGUFTensors(f int, gf *gguf.GGUFFile) error {
	path := s.files[f].path
	if gf.TensorDataStartOffset < 0 {
		return fmt.Errorf("gguf %s: negative tensor data offset %d", path, gf.TensorDataStartOffset)
	}
	dataStart := uint64(gf.TensorDataStartOffset)
	for _, ti := range gf.TensorInfos {
		t, ok := ggufDType(ti.Type)
		if !ok {
			return fmt.Errorf("gguf %s: tensor %s has type %v; supported: %s", path, ti.Name, ti.Type, ggufSupported)
		}
		shape, err := ggufShape(ti)
		if err != nil {
			return fmt.Errorf("gguf %s: tensor %s: %w", path, ti.Name, err)
		}
		begin, carry := bits.Add64(dataStart, ti.Offset, 0)
		if carry != 0 || begin > math.MaxInt64 {
			return fmt.Errorf("gguf %s: tensor %s: offset %d past end of file", path, ti.Name, ti.Offset)
		}
		info := TensorInfo{Name: ti.Name, Shape: shape, DType: t}
		rows, cols := info.Dims()
		if !t.Whole(cols) {
			return fmt.Errorf("gguf %s: tensor %s: %v rows of %d values are not a whole number of %d-value blocks", path, ti.Name, t, cols, t.BlockSize())
		}
		n := uint64(rows) * uint64(t.Bytes(cols)) // dims < 2^31 each: no overflow
		end, carry := bits.Add64(begin, n, 0)
		if carry != 0 {
			end = math.MaxUint64
		}
		if err := s.add(f, info, "", begin, end); err != nil {
			return err
		}
	}
	return nil
}

// ggufShape turns GGUF's innermost-first dimensions into [rows, cols] ([n] for vectors);
// dimensions past the second must be 1.
func ggufShape(ti gguf.GGUFTensorInfo) ([]int, error) {
	dims := ti.Dimensions
	if int(ti.NDimensions) != len(dims) || len(dims) == 0 {
		return nil, fmt.Errorf("%d dimensions listed for n_dims %d", len(dims), ti.NDimensions)
	}
	for len(dims) > 2 && dims[len(dims)-1] == 1 {
		dims = dims[:len(dims)-1]
	}
	if len(dims) > 2 {
		return nil, fmt.Errorf("dimensions %v: only 1-D and 2-D tensors are supported", ti.Dimensions)
	}
	for _, d := range dims {
		if d >= 1<<31 {
			return nil, fmt.Errorf("dimension %d too large", d)
		}
	}
	if len(dims) == 1 {
		return []int{int(dims[0])}, nil
	}
	return []int{int(dims[1]), int(dims[0])}, nil
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
