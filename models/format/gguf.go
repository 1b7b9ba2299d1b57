package format

import (
	"fmt"
	"math"
	"math/bits"
	"path/filepath"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/tpslice/tpslice/dtype"
)

// ParseGGUF reads a GGUF file's header (its metadata and tensor table) once for all its
// readers: the weights (OpenGGUF), the model's config, the tokenizer and the chat template.
// Errors name the file, and a file that is not a GGUF one says what it looks like.
func ParseGGUF(path string) (*gguf.GGUFFile, error) { return parseGGUF(path, false) }

// ParseGGUFMetadata is ParseGGUF without the large arrays (vocabularies, merges): enough
// for a config, cheap on a file of any size.
func ParseGGUFMetadata(path string) (*gguf.GGUFFile, error) { return parseGGUF(path, true) }

// OpenGGUF memory-maps a GGUF file (v2 or v3, little-endian, one file) whose header
// ParseGGUF read, and returns its tensors under their GGUF names, with shapes as [rows,
// cols] (GGUF lists dimensions innermost first: ne[0] is the number of columns). Tensors
// must be F32, F16, BF16 or one of the block types Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q5_0, Q5_1
// (kept as GGML's blocks); any other type is an error naming the tensor and the type.
func OpenGGUF(path string, gf *gguf.GGUFFile) (*FileSource, error) {
	s := newFileSource("gguf", path)
	f, err := s.mapFile(path)
	if err != nil {
		return nil, err
	}
	if err := s.addGGUFTensors(f, gf); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.seal()
	return s, nil
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
	gguf.GGMLTypeQ5_0: dtype.Q5_0,
	gguf.GGMLTypeQ5_1: dtype.Q5_1,
}

// ggufSupported names the GGML types ggmlTypes holds, for errors.
const ggufSupported = "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q5_0 and Q5_1"

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
