package format

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// GGUFAlignment is the alignment WriteGGUF gives the tensor data section and each tensor.
const GGUFAlignment = 32

// GGUF metadata value types, as the format numbers them.
const (
	ggufTypeUint32  = 4
	ggufTypeInt32   = 5
	ggufTypeFloat32 = 6
	ggufTypeBool    = 7
	ggufTypeString  = 8
	ggufTypeArray   = 9
	ggufTypeUint64  = 10
	ggufTypeInt64   = 11
)

// GGUFKV is one metadata entry WriteGGUF stores. Value is a string, bool, uint32, int32,
// uint64, int64 or float32, or an array: []string, []float32 or []int32 (what a model's
// config and its tokenizer need).
type GGUFKV struct {
	Key   string
	Value any
}

// WriteGGUF writes a GGUF v3 file that OpenGGUF reads back: the header, general.alignment
// and the metadata given (in order), the tensor infos (dimensions innermost first), padding
// to GGUFAlignment, and each tensor's data aligned to GGUFAlignment. Tensors keep their
// names, order and dtypes (a block type's Blocks as given, or its Data quantized with
// package quant).
func WriteGGUF(path string, meta []GGUFKV, tensors []Tensor) error {
	if err := checkTensors("gguf", path, tensors); err != nil {
		return err
	}
	var e ggufEncoder
	e.u32(0x46554747) // "GGUF"
	e.u32(3)
	e.u64(uint64(len(tensors)))

	meta = append([]GGUFKV{{"general.alignment", uint32(GGUFAlignment)}}, meta...)
	e.u64(uint64(len(meta)))
	for _, m := range meta {
		e.str(m.Key)
		if !e.value(m.Value) {
			return fmt.Errorf("gguf %s: metadata %s: value of type %T; want string, bool, uint32, int32, uint64, int64, float32, []string, []float32 or []int32", path, m.Key, m.Value)
		}
	}

	var off uint64
	offsets := make([]uint64, len(tensors))
	for i, t := range tensors {
		if len(t.Info.Name) > 63 {
			return fmt.Errorf("gguf %s: write tensor %q: name longer than 63 bytes", path, t.Info.Name)
		}
		e.str(t.Info.Name)
		e.u32(uint32(len(t.Info.Shape)))
		for d := len(t.Info.Shape) - 1; d >= 0; d-- { // innermost (columns) first
			e.u64(uint64(t.Info.Shape[d]))
		}
		e.u32(ggmlType(t.Info.DType))
		e.u64(off)
		offsets[i] = off
		off = alignUp(off+uint64(t.storedBytes()), GGUFAlignment)
	}
	for len(e.b)%GGUFAlignment != 0 {
		e.b = append(e.b, 0)
	}

	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	w := bufio.NewWriterSize(file, 1<<20)
	_, err = w.Write(e.b)
	var pos uint64
	for i, t := range tensors {
		if err != nil {
			break
		}
		if _, err = w.Write(make([]byte, offsets[i]-pos)); err != nil {
			break
		}
		err = writeEncoded(w, t)
		pos = offsets[i] + uint64(t.storedBytes())
	}
	if err == nil {
		_, err = w.Write(make([]byte, alignUp(pos, GGUFAlignment)-pos))
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	return nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

// ggufEncoder appends little-endian GGUF fields to a byte slice.
type ggufEncoder struct{ b []byte }

func (e *ggufEncoder) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *ggufEncoder) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *ggufEncoder) str(s string) {
	e.u64(uint64(len(s)))
	e.b = append(e.b, s...)
}

// value appends v's type and v; false when v is of no type GGUFKV lists.
func (e *ggufEncoder) value(v any) bool {
	switch v := v.(type) {
	case string:
		e.u32(ggufTypeString)
		e.str(v)
	case bool:
		e.u32(ggufTypeBool)
		b := byte(0)
		if v {
			b = 1
		}
		e.b = append(e.b, b)
	case uint32:
		e.u32(ggufTypeUint32)
		e.u32(v)
	case int32:
		e.u32(ggufTypeInt32)
		e.u32(uint32(v))
	case uint64:
		e.u32(ggufTypeUint64)
		e.u64(v)
	case int64:
		e.u32(ggufTypeInt64)
		e.u64(uint64(v))
	case float32:
		e.u32(ggufTypeFloat32)
		e.u32(math.Float32bits(v))
	case []string:
		e.arrayHeader(ggufTypeString, len(v))
		for _, s := range v {
			e.str(s)
		}
	case []float32:
		e.arrayHeader(ggufTypeFloat32, len(v))
		for _, f := range v {
			e.u32(math.Float32bits(f))
		}
	case []int32:
		e.arrayHeader(ggufTypeInt32, len(v))
		for _, i := range v {
			e.u32(uint32(i))
		}
	default:
		return false
	}
	return true
}

func (e *ggufEncoder) arrayHeader(elem uint32, n int) {
	e.u32(ggufTypeArray)
	e.u32(elem)
	e.u64(uint64(n))
}
