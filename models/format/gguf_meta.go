package format

import (
	"fmt"
	"math"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"
)

// GGUFMeta reads typed values out of the metadata of a GGUF header that ParseGGUF (or
// ParseGGUFMetadata) read from a file: the one reader of GGUF keys for a model's config, its
// tokenizer and its chat template. It checks each value's type before calling
// gguf-parser-go's accessors, which panic on a mismatch.
//
// Every getter returns the value, whether the key is present, and an error, naming the
// file, the key, the type stored and the type wanted, when the key holds a value of
// another type or out of range; an absent key is (zero, false, nil), and Missing is the
// error for a key that is required.
type GGUFMeta struct {
	path string
	file *gguf.GGUFFile
}

// NewGGUFMeta returns the metadata reader of file, a header read from path.
func NewGGUFMeta(path string, file *gguf.GGUFFile) GGUFMeta {
	return GGUFMeta{path: path, file: file}
}

// Missing is the error for a required key the file does not hold.
func (m GGUFMeta) Missing(key string) error {
	return m.errorf(key, " missing")
}

// errorf is an error about key: "gguf PATH: metadata key KEY" and then format (which begins
// with its own space or colon).
func (m GGUFMeta) errorf(key, format string, args ...any) error {
	return fmt.Errorf("gguf %s: metadata key %s%s", m.path, key, fmt.Sprintf(format, args...))
}

func (m GGUFMeta) wrongType(key, got, want string) error {
	return m.errorf(key, " holds %s, want %s", got, want)
}

func (m GGUFMeta) get(key string) (gguf.GGUFMetadataKV, bool) {
	return m.file.Header.MetadataKV.Get(key)
}

// String reads a string.
func (m GGUFMeta) String(key string) (string, bool, error) {
	kv, ok := m.get(key)
	if !ok {
		return "", false, nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeString {
		return "", false, m.wrongType(key, kv.ValueType.String(), "a string")
	}
	return kv.ValueString(), true, nil
}

// Bool reads a bool.
func (m GGUFMeta) Bool(key string) (bool, bool, error) {
	kv, ok := m.get(key)
	if !ok {
		return false, false, nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeBool {
		return false, false, m.wrongType(key, kv.ValueType.String(), "a bool")
	}
	return kv.ValueBool(), true, nil
}

// isInteger says whether t is one of GGUF's integer types.
func isInteger(t gguf.GGUFMetadataValueType) bool {
	return t.IsNumeric() && t != gguf.GGUFMetadataValueTypeFloat32 && t != gguf.GGUFMetadataValueTypeFloat64
}

// Int64 reads an integer of any GGUF integer type; a uint64 above math.MaxInt64 is out of
// range.
func (m GGUFMeta) Int64(key string) (int64, bool, error) {
	kv, ok := m.get(key)
	if !ok {
		return 0, false, nil
	}
	if !isInteger(kv.ValueType) {
		return 0, false, m.wrongType(key, kv.ValueType.String(), "an integer")
	}
	if kv.ValueType == gguf.GGUFMetadataValueTypeUint64 {
		if v := kv.ValueUint64(); v > math.MaxInt64 {
			return 0, false, m.errorf(key, " = %d is out of range (want at most %d)", v, int64(math.MaxInt64))
		}
	}
	return gguf.ValueNumeric[int64](kv), true, nil
}

// Int reads a count or a size: an integer of any GGUF integer type from 0 to
// math.MaxInt32.
func (m GGUFMeta) Int(key string) (int, bool, error) {
	v, ok, err := m.Int64(key)
	if !ok {
		return 0, false, err
	}
	if v < 0 || v > math.MaxInt32 {
		return 0, false, m.errorf(key, " = %d is out of range (want 0 to %d)", v, math.MaxInt32)
	}
	return int(v), true, nil
}

// Float reads a number of any GGUF numeric type as a float64 (a float32 is widened
// exactly).
func (m GGUFMeta) Float(key string) (float64, bool, error) {
	kv, ok := m.get(key)
	if !ok {
		return 0, false, nil
	}
	switch {
	case kv.ValueType == gguf.GGUFMetadataValueTypeFloat32:
		return float64(kv.ValueFloat32()), true, nil
	case kv.ValueType == gguf.GGUFMetadataValueTypeFloat64:
		return kv.ValueFloat64(), true, nil
	case kv.ValueType.IsNumeric():
		return gguf.ValueNumeric[float64](kv), true, nil
	}
	return 0, false, m.wrongType(key, kv.ValueType.String(), "a number")
}

// ArrayLen reads the length of an array of any element type; it needs no more than
// ParseGGUFMetadata reads, which skips the elements of large arrays.
func (m GGUFMeta) ArrayLen(key string) (int, bool, error) {
	kv, ok := m.get(key)
	if !ok {
		return 0, false, nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeArray {
		return 0, false, m.wrongType(key, kv.ValueType.String(), "an array")
	}
	n := kv.ValueArray().Len
	if n > math.MaxInt32 {
		return 0, false, m.errorf(key, " has %d elements, more than %d", n, math.MaxInt32)
	}
	return int(n), true, nil
}

// array returns key's array, checking that its elements are of a type accept accepts
// (want names those types) and that the parser read all of them.
func (m GGUFMeta) array(key, want string, accept func(gguf.GGUFMetadataValueType) bool) (gguf.GGUFMetadataKVArrayValue, bool, error) {
	kv, ok := m.get(key)
	if !ok {
		return gguf.GGUFMetadataKVArrayValue{}, false, nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeArray {
		return gguf.GGUFMetadataKVArrayValue{}, false, m.wrongType(key, kv.ValueType.String(), "an array of "+want)
	}
	arr := kv.ValueArray()
	if !accept(arr.Type) {
		return arr, false, m.wrongType(key, "an array of "+arr.Type.String(), "an array of "+want)
	}
	if uint64(len(arr.Array)) != arr.Len {
		return arr, false, m.errorf(key, ": the parser read %d of its %d elements (a header from ParseGGUFMetadata, which skips large arrays?)", len(arr.Array), arr.Len)
	}
	return arr, true, nil
}

// Float32s reads an array of float32 (or float64, narrowed).
func (m GGUFMeta) Float32s(key string) ([]float32, bool, error) {
	arr, ok, err := m.array(key, "float32", func(t gguf.GGUFMetadataValueType) bool {
		return t == gguf.GGUFMetadataValueTypeFloat32 || t == gguf.GGUFMetadataValueTypeFloat64
	})
	if !ok {
		return nil, false, err
	}
	return gguf.ValuesNumeric[float32](arr), true, nil
}

// Int32s reads an array of any GGUF integer type as int32s.
func (m GGUFMeta) Int32s(key string) ([]int32, bool, error) {
	arr, ok, err := m.array(key, "int32", isInteger)
	if !ok {
		return nil, false, err
	}
	return gguf.ValuesNumeric[int32](arr), true, nil
}

// Strings reads an array of strings exactly as stored. gguf-parser-go v0.28.1 trims
// Unicode white space off every string it reads (bytes.TrimSpace in
// _GGUFReader.ReadString). In the Llama 2 vocab that corrupts 37 of the 32000 entries:
// "\u00a0\u00a0" (id 8655), "\r" and "\u3000" become "", ";\r" (2104) becomes ";", "▁{\r"
// (3336) "▁{", so text with CRLF line ends or non-breaking spaces would tokenize
// differently from llama.cpp. So the parser locates the array (its StartOffset) and its
// result is checked against, but the bytes are read again from the file here.
func (m GGUFMeta) Strings(key string) ([]string, bool, error) {
	arr, ok, err := m.array(key, "string", func(t gguf.GGUFMetadataValueType) bool {
		return t == gguf.GGUFMetadataValueTypeString
	})
	if !ok {
		return nil, false, err
	}
	raw, err := m.rereadStrings(arr)
	if err != nil {
		return nil, false, m.errorf(key, ": %v", err)
	}
	trimmed := arr.ValuesString()
	for i := range raw {
		if strings.TrimSpace(raw[i]) != trimmed[i] {
			return nil, false, m.errorf(key, "[%d]: the bytes at offset %d read %q where the GGUF parser read %q", i, arr.StartOffset, raw[i], trimmed[i])
		}
	}
	return raw, true, nil
}

// rereadStrings reads the string array that starts (with its element type) at
// arr.StartOffset of the file, which ParseGGUF checked is little-endian.
func (m GGUFMeta) rereadStrings(arr gguf.GGUFMetadataKVArrayValue) ([]string, error) {
	data, unmap, err := mapFile(m.path)
	if err != nil {
		return nil, err
	}
	defer unmap()
	if arr.StartOffset < 0 || arr.StartOffset > int64(len(data)) {
		return nil, fmt.Errorf("offset %d is outside the file (%d bytes)", arr.StartOffset, len(data))
	}
	s := &ggufScanner{b: data, pos: uint64(arr.StartOffset)}
	length := s.u64
	if m.file.Header.Version <= gguf.GGUFVersionV1 { // v1 wrote lengths as uint32
		length = func() (uint64, error) { v, err := s.u32(); return uint64(v), err }
	}
	typ, err := s.u32()
	if err != nil {
		return nil, fmt.Errorf("re-reading the element type at offset %d: %w", arr.StartOffset, err)
	}
	count, err := length()
	if err != nil {
		return nil, fmt.Errorf("re-reading the length at offset %d: %w", arr.StartOffset, err)
	}
	if gguf.GGUFMetadataValueType(typ) != gguf.GGUFMetadataValueTypeString || count != arr.Len {
		return nil, fmt.Errorf("offset %d holds %d elements of type %d, not the parser's %d strings (a split GGUF whose first part was not given?)", arr.StartOffset, count, typ, arr.Len)
	}
	out := make([]string, count)
	for i := range out {
		n, err := length()
		if err != nil {
			return nil, fmt.Errorf("re-reading string %d: %w", i, err)
		}
		b, err := s.take(n)
		if err != nil {
			return nil, fmt.Errorf("re-reading string %d of %d bytes at offset %d: %w", i, n, s.pos, err)
		}
		out[i] = string(b)
	}
	return out, nil
}
