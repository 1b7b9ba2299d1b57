package models

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// Dest is where a read writes: elements of DType, in F32 for f32 and as bit patterns in
// U16 for bf16 and f16. Build one with F32Dest, U16Dest or BufferDest.
type Dest struct {
	// DType is the element type the read converts to.
	DType dtype.DType
	// F32 holds the elements when DType is F32.
	F32 []float32
	// U16 holds the bit patterns when DType is BF16 or F16.
	U16 []uint16
}

// F32Dest writes float32 elements into s.
func F32Dest(s []float32) Dest { return Dest{DType: dtype.F32, F32: s} }

// U16Dest writes bf16 or f16 bit patterns (t says which) into s.
func U16Dest(t dtype.DType, s []uint16) Dest { return Dest{DType: t, U16: s} }

// BufferDest writes into device memory, in the buffer's own dtype.
func BufferDest(b *device.Buffer) Dest {
	if b.DType() == dtype.F32 {
		return F32Dest(b.Float32s()[:b.Len()])
	}
	return U16Dest(b.DType(), b.Uint16s()[:b.Len()])
}

// Len is the number of elements the destination holds.
func (d Dest) Len() int {
	if d.DType == dtype.F32 {
		return len(d.F32)
	}
	return len(d.U16)
}

// Slice is the part [lo, hi) of the destination, for reading several tensors (Q, K and V
// shards, say) into one buffer.
func (d Dest) Slice(lo, hi int) Dest {
	if d.DType == dtype.F32 {
		d.F32 = d.F32[lo:hi]
	} else {
		d.U16 = d.U16[lo:hi]
	}
	return d
}

func (d Dest) check() error {
	switch d.DType {
	case dtype.F32:
		if d.U16 != nil {
			return fmt.Errorf("f32 destination with 16-bit words set")
		}
	case dtype.BF16, dtype.F16:
		if d.F32 != nil {
			return fmt.Errorf("%v destination with float32 elements set", d.DType)
		}
	default:
		return fmt.Errorf("destination dtype %v: want f32, bf16 or f16", d.DType)
	}
	return nil
}
