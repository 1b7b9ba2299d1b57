package models

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/tpslice/tpslice/dtype"
)

// decodeInto converts the little-endian elements of type src held in b into dst[off:],
// exactly: same-type copies are bit copies, widening is exact, narrowing rounds to
// nearest even (package dtype). len(b) is a whole number of src elements.
func decodeInto(dst Dest, off int, src dtype.DType, b []byte) {
	n := len(b) / src.Size()
	switch {
	case src == dst.DType && hostLittleEndian():
		if src == dtype.F32 {
			copy(f32Bytes(dst.F32[off:off+n]), b)
		} else {
			copy(u16Bytes(dst.U16[off:off+n]), b)
		}
	case src == dtype.F32 && dst.DType == dtype.F32:
		out := dst.F32[off : off+n]
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case src == dtype.F32:
		out := dst.U16[off : off+n]
		for i := range out {
			out[i] = dtype.FromF32(dst.DType, math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case dst.DType == dtype.F32:
		out := dst.F32[off : off+n]
		for i := range out {
			out[i] = dtype.ToF32(src, binary.LittleEndian.Uint16(b[2*i:]))
		}
	case src == dst.DType:
		out := dst.U16[off : off+n]
		for i := range out {
			out[i] = binary.LittleEndian.Uint16(b[2*i:])
		}
	default: // bf16 <-> f16: widening is exact, so one rounding.
		out := dst.U16[off : off+n]
		for i := range out {
			out[i] = dtype.FromF32(dst.DType, dtype.ToF32(src, binary.LittleEndian.Uint16(b[2*i:])))
		}
	}
}

// encodeF32 appends the elements of v stored as type t (little-endian) to b, narrowing
// with round-to-nearest-even.
func encodeF32(b []byte, t dtype.DType, v []float32) []byte {
	if t == dtype.F32 {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		return b
	}
	for _, x := range v {
		b = binary.LittleEndian.AppendUint16(b, dtype.FromF32(t, x))
	}
	return b
}

func hostLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

func f32Bytes(s []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*len(s))
}

func u16Bytes(s []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s))
}
