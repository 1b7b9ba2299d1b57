package stepwire

import (
	"encoding/binary"
	"fmt"
	"math"
)

func appendU32(b []byte, vs ...int) []byte {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

func appendI32s(b []byte, vs []int32) []byte {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

func appendF32(b []byte, vs ...float32) []byte {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// reader decodes fields in order; the first field that does not fit sets err, and every
// later read returns zero, so a decoder checks err once at the end.
type reader struct {
	b   []byte
	off int
	err error
}

// bytes returns the next n bytes of field, or nil once anything failed.
func (r *reader) bytes(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if left := len(r.b) - r.off; n > left {
		r.err = fmt.Errorf("truncated: %s needs %d bytes at offset %d, %d left", field, n, r.off, left)
		return nil
	}
	r.off += n
	return r.b[r.off-n : r.off]
}

func (r *reader) u8(field string) byte {
	if b := r.bytes(field, 1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u32(field string) uint32 {
	if b := r.bytes(field, 4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64(field string) uint64 {
	if b := r.bytes(field, 8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) f32(field string) float32 { return math.Float32frombits(r.u32(field)) }

// int reads a u32 as an int (a count or an index: never negative).
func (r *reader) int(field string) int { return int(r.u32(field)) }

// count reads how many items of at least itemBytes each follow, and refuses a count the
// bytes left cannot hold before anyone allocates for it.
func (r *reader) count(field string, itemBytes int) int {
	n := r.int(field)
	if r.err == nil && n > (len(r.b)-r.off)/itemBytes {
		r.err = fmt.Errorf("%s: %d of at least %d bytes each at offset %d, only %d bytes left", field, n, itemBytes, r.off, len(r.b)-r.off)
		return 0
	}
	return n
}

// i32s reads n int32s; nil for none.
func (r *reader) i32s(field string, n int) []int32 {
	return words(r, field, n, func(w uint32) int32 { return int32(w) })
}

// f32s reads n float32s; nil for none.
func (r *reader) f32s(field string, n int) []float32 { return words(r, field, n, math.Float32frombits) }

// words reads n 4-byte words of field, each converted by conv; nil for none.
func words[T any](r *reader, field string, n int, conv func(uint32) T) []T {
	b := r.bytes(field, 4*n)
	if len(b) == 0 {
		return nil
	}
	vs := make([]T, n)
	for i := range vs {
		vs[i] = conv(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return vs
}

// done returns the first error, or one for bytes left over.
func (r *reader) done() error {
	if r.err == nil && r.off != len(r.b) {
		return fmt.Errorf("%d bytes left over after the last field", len(r.b)-r.off)
	}
	return r.err
}
