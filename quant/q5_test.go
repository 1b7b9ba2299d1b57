package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// refDequant5 is dequantize_row_q5_0 (offset 16, no min) and dequantize_row_q5_1 (offset
// 0, min m) as ggml-quants.c writes them, one block: the fifth bits taken with its shifts.
func refDequant5(b []byte, withMin bool) []float32 {
	d := dtype.F16ToF32(binary.LittleEndian.Uint16(b))
	var m float32
	off, q := 2, 16
	if withMin {
		m, off, q = dtype.F16ToF32(binary.LittleEndian.Uint16(b[2:])), 4, 0
	}
	qh := binary.LittleEndian.Uint32(b[off:])
	qs := b[off+4:]
	y := make([]float32, 32)
	for j := range 16 {
		xh0 := uint8((qh>>j)<<4) & 0x10
		xh1 := uint8(qh>>(j+12)) & 0x10
		x0 := int32(qs[j]&0x0F|xh0) - int32(q)
		x1 := int32(qs[j]>>4|xh1) - int32(q)
		y[j], y[j+16] = float32(x0)*d, float32(x1)*d
		if withMin { // q5_0's x0*d keeps the sign of a zero product; only q5_1 adds m
			y[j], y[j+16] = y[j]+m, y[j+16]+m
		}
	}
	return y
}

// randBlock5 is a random Q5_0 or Q5_1 block with finite scales.
func randBlock5(r *rand.Rand, t dtype.DType) []byte {
	b := make([]byte, t.BlockBytes())
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	scales := 1
	if t == dtype.Q5_1 {
		scales = 2
	}
	for s := range scales {
		binary.LittleEndian.PutUint16(b[2*s:], dtype.F32ToF16(float32(r.NormFloat64())))
	}
	return b
}

// TestDequantizeQ5MatchesReference: Q5_0 and Q5_1 blocks of random bits dequantize to
// ggml's reference values, bit for bit.
func TestDequantizeQ5MatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 1))
	for _, typ := range []dtype.DType{dtype.Q5_0, dtype.Q5_1} {
		for range 2000 {
			b := randBlock5(r, typ)
			got := make([]float32, 32)
			require.NoError(t, Dequantize(typ, got, b))
			want := refDequant5(b, typ == dtype.Q5_1)
			for j := range got {
				require.Equal(t, math.Float32bits(want[j]), math.Float32bits(got[j]), "%v value %d of block %x", typ, j, b)
			}
		}
	}
}

// TestQuantizeQ5: the reference quantizers put every value within half a step (d/2) of
// the original (a whole step for Q5_0's value opposite its largest, which the clamp to 15
// takes: levels run −16..15), keep zero blocks zero, and use all 32 levels on a ramp.
func TestQuantizeQ5(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 2))
	for _, typ := range []dtype.DType{dtype.Q5_0, dtype.Q5_1} {
		t.Run(typ.String(), func(t *testing.T) {
			for range 200 {
				x := randValues(r, 32, 1)
				b := make([]byte, typ.BlockBytes())
				require.NoError(t, Quantize(typ, b, x))
				y := make([]float32, 32)
				require.NoError(t, Dequantize(typ, y, b))
				d := math.Abs(float64(dtype.F16ToF32(binary.LittleEndian.Uint16(b))))
				step := d / 2
				if typ == dtype.Q5_0 {
					step = d
				}
				for j := range x {
					// The step, plus the f16 rounding of the scale (and min) over 31 steps.
					require.InDelta(t, x[j], y[j], step+32*d/2048+1e-6, "value %d", j)
				}
			}
			ramp := make([]float32, 32)
			for j := range ramp {
				ramp[j] = float32(j - 16)
			}
			b := make([]byte, typ.BlockBytes())
			require.NoError(t, Quantize(typ, b, ramp))
			seen := map[int]bool{}
			for j := range 16 {
				off := 2
				if typ == dtype.Q5_1 {
					off = 4
				}
				lo, hi := fifthBits(b, off, off+4, j)
				seen[lo], seen[hi] = true, true
			}
			require.Len(t, seen, 32)
			zero := make([]byte, typ.BlockBytes())
			require.NoError(t, Quantize(typ, zero, make([]float32, 32)))
			y := make([]float32, 32)
			require.NoError(t, Dequantize(typ, y, zero))
			require.Equal(t, make([]float32, 32), y)
		})
	}
}
