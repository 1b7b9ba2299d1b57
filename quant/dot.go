package quant

import (
	"encoding/binary"
	"math"

	"github.com/tpslice/tpslice/dtype"
)

// Dot computes outputs [o0, o1) of y = x·Wᵀ for the m rows of activations quantized in xq
// (format ActsFor(t), ActsFor(t).RowBytes(cols) bytes per row) against the device rows of
// W (cols values of t each, as Pack leaves them): y[i·ystride + o] for rows i of x and
// weight rows o. Products of weights and quantized activations are exact integer sums; the
// float arithmetic after them has one fixed order per output, so the result is
// deterministic and the same for any m, any split of [o0, o1) and on every kernel
// (AVX-512, AVX2, Go): a GEMM row is bitwise the GEMV of that row. The reference loops,
// with qa, da the activation block's values and scale and g its sums over each 16 values:
//
//	Q8_0, Q4_0 (blocks b of 32, w the signed weights; Q4_0's w = nibble - 8):
//		var acc [16]float32
//		for b := range nb {
//			var quad [8]int32 // values 2l, 2l+1, 16+2l, 17+2l
//			for i := range 32 { quad[(i%16)/2] += int32(w_b[i]) * int32(qa_b[i]) }
//			scale := float32(dw_b * da_b)
//			for l := range 8 { acc[8*(b%2)+l] += float32(scale * float32(quad[l])) }
//		}
//		y = combine16(acc) // lanes l and l+8, then ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7))
//	Q4_K, Q5_K (super-blocks of 256, sub-blocks j of 32 with 6-bit sc_j, m_j):
//		isum := Σ_j sc_j · Σ_{i∈j} q_i·qa_i;  imin := Σ_j m_j · (g_2j + g_2j+1)   (exact)
//		y += float32(float32(da*d)*float32(isum)) - float32(float32(da*dmin)*float32(imin))
//	Q6_K (super-blocks of 256, 16 groups of 16 with int8 sc_g, values q = stored - 32):
//		isum := Σ_g sc_g · Σ_{i∈g} q_i·qa_i                                       (exact)
//		y += float32(float32(da*d) * float32(isum))
//
// The super-blocks add in order. It does not check its arguments (layers does) and does not
// allocate.
func Dot(t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, cols, o0, o1 int) {
	dotRows(t, y, ystride, xq, m, w, cols, o0, o1)
}

// dotRowsGo is Dot in portable Go, one output at a time.
func dotRowsGo(t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, cols, o0, o1 int) {
	arb, wrb := ActsFor(t).RowBytes(cols), t.Bytes(cols)
	dot := rowDots[t]
	for i := range m {
		a := xq[i*arb : (i+1)*arb]
		for o := o0; o < o1; o++ {
			y[i*ystride+o] = dot(w[o*wrb:(o+1)*wrb], a, cols)
		}
	}
}

// rowDots hold the one-row reference dot product of each type; never written.
var rowDots = map[dtype.DType]func(w, a []byte, cols int) float32{
	dtype.Q8_0: dotQ8_0,
	dtype.Q4_0: dotQ4_0,
	dtype.Q4_K: func(w, a []byte, cols int) float32 { return dotQxK(w, a, cols, false) },
	dtype.Q5_K: func(w, a []byte, cols int) float32 { return dotQxK(w, a, cols, true) },
	dtype.Q6_K: dotQ6_K,
}

// actsRow views a row of quantized activations of n blocks of bs: value i, block scale b
// and (for 256-value blocks) the sum of the values of 16-value group k.
type actsRow struct {
	qs, ds, gs []byte
}

func viewActs(a []byte, cols, bs int) actsRow {
	nb := cols / bs
	return actsRow{qs: a[:2*cols], ds: a[2*cols : 2*cols+4*nb], gs: a[2*cols+4*nb:]}
}

func (r actsRow) q(i int) int32 { return int32(int16(binary.LittleEndian.Uint16(r.qs[2*i:]))) }
func (r actsRow) d(b int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(r.ds[4*b:]))
}
func (r actsRow) g(k int) int64 { return int64(int32(binary.LittleEndian.Uint32(r.gs[4*k:]))) }

// dot32 is the reference of the 32-value types, weight value i of block b given by w.
func dot32(w func(b, i int) int32, dw func(b int) float32, a actsRow, nb int) float32 {
	var acc [16]float32
	for b := range nb {
		var quad [8]int32
		for i := range 32 {
			quad[(i%16)/2] += w(b, i) * a.q(pairLayout(b, i, nb))
		}
		scale := float32(dw(b) * a.d(b))
		for l := range 8 {
			acc[8*(b%2)+l] += float32(scale * float32(quad[l]))
		}
	}
	return combine16(&acc)
}

func dotQ8_0(w, a []byte, cols int) float32 {
	nb := cols / 32
	return dot32(func(b, i int) int32 { return int32(int8(w[pairLayout(b, i, nb)])) },
		func(b int) float32 { return f16At(w, 32*nb+2*b) }, viewActs(a, cols, 32), nb)
}

func dotQ4_0(w, a []byte, cols int) float32 {
	nb := cols / 32
	return dot32(func(b, i int) int32 { return int32(w[16*b+i%16]>>(4*(i/16))&0xF) - 8 },
		func(b int) float32 { return f16At(w, 16*nb+2*b) }, viewActs(a, cols, 32), nb)
}

func dotQxK(w, a []byte, cols int, q5 bool) float32 {
	ns := cols / kBlock
	acts := viewActs(a, cols, kBlock)
	bb := dtype.Q4_K.BlockBytes()
	if q5 {
		bb = dtype.Q5_K.BlockBytes()
	}
	var y float32
	for b := range ns {
		blk := w[b*bb : (b+1)*bb]
		scales, qs := blk[q4KScales:q4KScales+12], blk[q4KQs:]
		if q5 {
			qs = blk[q5KQs:]
		}
		var isum, imin int64
		for j := range 8 {
			sc, m := scaleMinK4(j, scales)
			c, hi := j/2, j%2 // values 64c+32·hi+l come from byte 32c+l
			var sub int64
			for l := range 32 {
				q := qs[32*c+l] >> (4 * hi) & 0xF
				if q5 {
					q |= (blk[q5KQh+l] >> j & 1) << 4
				}
				sub += int64(q) * int64(acts.q(kBlock*b+32*j+l))
			}
			isum += int64(sc) * sub
			imin += int64(m) * (acts.g(16*b+2*j) + acts.g(16*b+2*j+1))
		}
		da := acts.d(b)
		y += float32(float32(da*f16At(blk, q4KD))*float32(isum)) - float32(float32(da*f16At(blk, q4KDmin))*float32(imin))
	}
	return y
}

func dotQ6_K(w, a []byte, cols int) float32 {
	ns := cols / kBlock
	acts := viewActs(a, cols, kBlock)
	bb := dtype.Q6_K.BlockBytes()
	var y float32
	for b := range ns {
		blk := w[b*bb : (b+1)*bb]
		var isum int64
		for g := range 16 {
			var sub int64
			for i := 16 * g; i < 16*(g+1); i++ {
				sub += int64(q6KValue(blk, i)-32) * int64(acts.q(kBlock*b+i))
			}
			isum += int64(int8(blk[q6KScales+g])) * sub
		}
		y += float32(float32(acts.d(b)*f16At(blk, q6KD)) * float32(isum))
	}
	return y
}

// combine16 sums 16 partial sums as Dot's reference does: lanes l and l+8 first, then the
// tree of an 8-lane horizontal add.
func combine16(acc *[16]float32) float32 {
	var s [8]float32
	for l := range 8 {
		s[l] = acc[l] + acc[l+8]
	}
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}
