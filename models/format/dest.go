package format

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/quant"
)

// Dest is where a read writes: values of DType, in F32 for f32, as bit patterns in U16 for
// bf16 and f16, and as GGML blocks (ggml-common.h's layout) in Blocks for the block types.
// Build one with F32Dest, U16Dest, BlockDest or BufferDest.
type Dest struct {
	// DType is the type the read converts to.
	DType dtype.DType
	// F32 holds the elements when DType is F32.
	F32 []float32
	// U16 holds the bit patterns when DType is BF16 or F16.
	U16 []uint16
	// Blocks holds whole blocks when DType is a block type.
	Blocks []byte
}

// F32Dest writes float32 elements into s.
func F32Dest(s []float32) Dest { return Dest{DType: dtype.F32, F32: s} }

// U16Dest writes bf16 or f16 bit patterns (t says which) into s.
func U16Dest(t dtype.DType, s []uint16) Dest { return Dest{DType: t, U16: s} }

// BlockDest writes GGML blocks of type t into b: copied as stored when the source holds the
// same blocks, quantized (package quant) otherwise.
func BlockDest(t dtype.DType, b []byte) Dest { return Dest{DType: t, Blocks: b} }

// BufferDest writes into device memory, in the buffer's own dtype.
func BufferDest(b *device.Buffer) Dest {
	switch t := b.DType(); {
	case t == dtype.F32:
		return F32Dest(b.Float32s()[:b.Len()])
	case t.Quantized():
		return BlockDest(t, b.Bytes8())
	default:
		return U16Dest(t, b.Uint16s()[:b.Len()])
	}
}

// Len is the number of values the destination holds.
func (d Dest) Len() int {
	switch {
	case d.DType == dtype.F32:
		return len(d.F32)
	case d.DType.Quantized():
		return len(d.Blocks) / d.DType.BlockBytes() * d.DType.BlockSize()
	default:
		return len(d.U16)
	}
}

// Slice is the part [lo, hi) of the destination (whole blocks, for a block type), for
// reading several tensors (Q, K and V shards, say) into one buffer.
func (d Dest) Slice(lo, hi int) Dest {
	switch {
	case d.DType == dtype.F32:
		d.F32 = d.F32[lo:hi]
	case d.DType.Quantized():
		d.Blocks = d.Blocks[d.DType.Bytes(lo):d.DType.Bytes(hi)]
	default:
		d.U16 = d.U16[lo:hi]
	}
	return d
}

func (d Dest) check() error {
	switch {
	case d.DType == dtype.F32 && (d.U16 != nil || d.Blocks != nil):
		return fmt.Errorf("f32 destination with 16-bit words or blocks set")
	case (d.DType == dtype.BF16 || d.DType == dtype.F16) && (d.F32 != nil || d.Blocks != nil):
		return fmt.Errorf("%v destination with float32 elements or blocks set", d.DType)
	case d.DType.Quantized() && (d.F32 != nil || d.U16 != nil):
		return fmt.Errorf("%v destination with float32 elements or 16-bit words set", d.DType)
	case d.DType.Quantized() && len(d.Blocks)%d.DType.BlockBytes() != 0:
		return fmt.Errorf("%v destination of %d bytes: not a whole number of %d-byte blocks", d.DType, len(d.Blocks), d.DType.BlockBytes())
	case !d.DType.Valid():
		return fmt.Errorf("destination dtype %v: want f32, bf16, f16 or a block type", d.DType)
	}
	return nil
}

// StoreF32 writes v into d[off:], rounding to d's 16-bit dtype or quantizing into its
// blocks (off and len(v) whole blocks).
func (d Dest) StoreF32(off int, v []float32) error {
	switch t := d.DType; {
	case t == dtype.F32:
		copy(d.F32[off:off+len(v)], v)
	case t.Quantized():
		return quant.Quantize(t, d.Blocks[t.Bytes(off):t.Bytes(off+len(v))], v)
	default:
		out := d.U16[off : off+len(v)]
		for i, x := range v {
			out[i] = dtype.FromF32(t, x)
		}
	}
	return nil
}
