package format

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/quant"
)

// readRegion copies region r of a row-major tensor stored in data into dst, converting
// exactly where a conversion is exact: same-type copies are bit copies (whole blocks of a
// block type included), widening to f32 and dequantizing are exact, narrowing to bf16/f16
// rounds to nearest even, and a block-type destination is quantized (package quant) from
// the exact f32 values. The region was checked against the tensor and dst.
func readRegion(data []byte, info TensorInfo, r Region, dst Dest) error {
	_, cols := info.Dims()
	w, t := r.Col1-r.Col0, info.DType
	if w == 0 {
		return nil
	}
	rowBytes := t.Bytes(cols)
	var tmp []float32 // f32 values of one row's region, where the types differ
	if t != dst.DType && !(t.Scalar() && dst.DType.Scalar()) {
		tmp = make([]float32, w)
	}
	var blocks []float32 // the dequantized blocks a row's region lies in
	bs := t.BlockSize()
	b0, b1 := r.Col0/bs, (r.Col1+bs-1)/bs
	if t.Quantized() && tmp != nil {
		blocks = make([]float32, (b1-b0)*bs)
	}
	for row := r.Row0; row < r.Row1; row++ {
		off := (row - r.Row0) * w
		src := data[row*rowBytes : (row+1)*rowBytes]
		switch {
		case t.Scalar() && tmp == nil:
			es := t.Size()
			decodeInto(dst, off, t, src[r.Col0*es:r.Col1*es])
		case t.Scalar():
			es := t.Size()
			decodeInto(F32Dest(tmp), 0, t, src[r.Col0*es:r.Col1*es])
			if err := dst.StoreF32(off, tmp); err != nil {
				return err
			}
		case t == dst.DType && r.Col0%bs == 0: // whole blocks (the region's width was checked)
			copy(dst.Blocks[t.Bytes(off):t.Bytes(off+w)], src[t.Bytes(r.Col0):t.Bytes(r.Col1)])
		default:
			if err := quant.Dequantize(t, blocks, src[b0*t.BlockBytes():b1*t.BlockBytes()]); err != nil {
				return err
			}
			if err := dst.StoreF32(off, blocks[r.Col0-b0*bs:r.Col1-b0*bs]); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeInto converts the little-endian elements of element type src held in b into an
// element-type dst[off:], exactly: same-type copies are bit copies, widening is exact,
// narrowing rounds to nearest even (package dtype). len(b) is a whole number of elements.
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

// encodeF32 appends the elements of v stored as element type t (little-endian) to b,
// narrowing with round-to-nearest-even.
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
