package quant

import (
	"encoding/binary"
	"math"

	"github.com/tpslice/tpslice/dtype"
)

// Dot computes outputs [o0, o1) of y = x·Wᵀ for the m rows of activations quantized in xq
// (format ActsFor(t), ActsFor(t).RowBytes(cols) bytes per row) against the device matrix
// W (rows × cols values of t, as Pack leaves them): y[i·ystride + o] for rows i of x and
// weight rows o; o0 is a multiple of RowAlign(t), and so is o1 unless it is rows. Products of weights and quantized activations are exact integer sums; the
// float arithmetic after them has one fixed order per output, so the result is
// deterministic and the same for any m, any split of [o0, o1) and on every kernel
// (AVX-512, AVX2, Go): a GEMM row is bitwise the GEMV of that row. The reference loops,
// with qa, da the activation block's values and scale and g its sums over each 16 values:
//
//	Q4_0 (blocks b of 32, w = nibble - 8):
//		var acc float32
//		for b := range nb { acc += float32(float32(dw_b*da_b) * float32(Σ_i w_i*qa_i)) }
//	Q8_0 (blocks b of 32, w the signed weights):
//		var acc [16]float32
//		for b := range nb {
//			var quad [8]int32 // values 2l, 2l+1, 16+2l, 17+2l
//			for i := range 32 { quad[(i%16)/2] += int32(w_b[i]) * int32(qa_b[i]) }
//			scale := float32(dw_b * da_b)
//			for l := range 8 { acc[8*(b%2)+l] += float32(scale * float32(quad[l])) }
//		}
//		y = combine16(acc) // lanes l and l+8, then ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7))
//	Q4_K, Q5_K (super-blocks b of 256, sub-blocks j of 32 with 6-bit sc_j, m_j; g_k the
//	activations' sums over values 16k..16k+15):
//		var acc [16]float32
//		for b := range ns {
//			var lane, mins [16]int32 // lane l: the values i with (i%64)/4 == l
//			for i := range 256 { lane[(i%64)/4] += sc_{i/32} * q_i * qa_i }
//			for l := range 16 { mins[l] = m_{l/2} * g_l }
//			dd, dm := float32(da*d), float32(da*dmin)
//			for l := range 16 { acc[l] += float32(dd*float32(lane[l])) - float32(dm*float32(mins[l])) }
//		}
//		y = combine16(acc)
//	Q6_K (16 groups k of 16 with int8 sc_k, stored values u = q + 32): as Q4_K with
//		lane[(i%64)/4] += sc_{i/16}*u_i*qa_i, mins[l] = 32*sc_l*g_l and dm = dd.
//
// It does not check its arguments (layers does) and does not allocate.
func Dot(t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, rows, cols, o0, o1 int) {
	dotRows(t, y, ystride, xq, m, w, rows, cols, o0, o1)
}

// dotRowsGo is Dot in portable Go, one output at a time.
func dotRowsGo(t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, rows, cols, o0, o1 int) {
	arb, wrb := ActsFor(t).RowBytes(cols), t.Bytes(cols)
	for i := range m {
		a := xq[i*arb : (i+1)*arb]
		for o := o0; o < o1; o++ {
			if t == dtype.Q4_0 {
				y[i*ystride+o] = dotQ4_0(w, o, a, cols)
			} else {
				y[i*ystride+o] = rowDots[t](w[o*wrb:(o+1)*wrb], a, cols)
			}
		}
	}
}

// rowDots hold the one-row reference dot product of each ungrouped type; never written.
var rowDots = map[dtype.DType]func(w, a []byte, cols int) float32{
	dtype.Q8_0: dotQ8_0,
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

// q is value i of a row of Acts16x32 (at its position in pairLayout's order).
func (r actsRow) q(i int) int32 { return int32(int16(binary.LittleEndian.Uint16(r.qs[2*i:]))) }

// q256 is value i of a row of Acts16x256: 256·hi + lo of its block's byte planes.
func (r actsRow) q256(i int) int64 { return r.planeValue(i, kBlock) }

// planeValue is value i of a row of byte planes of bs-value blocks.
func (r actsRow) planeValue(i, bs int) int64 {
	b, j := i/bs, i%bs
	return 256*int64(int8(r.qs[2*bs*b+bs+j])) + int64(int8(r.qs[2*bs*b+j]))
}
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

// dotQ4_0 is the reference of row r of a grouped Q4_0 matrix w.
func dotQ4_0(w []byte, r int, a []byte, cols int) float32 {
	nb := cols / 32
	acts := viewActs(a, cols, 32)
	var acc float32
	for b := range nb {
		var isum int64
		for i := range 32 {
			at, high := q4_0Nibble(r, b, i, nb)
			isum += (int64(nibble(w, at, high)) - 8) * acts.planeValue(32*b+i, 32)
		}
		acc += float32(float32(f16At(w, q4_0Scale(r, b, nb))*acts.d(b)) * float32(isum))
	}
	return acc
}

func dotQxK(w, a []byte, cols int, q5 bool) float32 {
	ns := cols / kBlock
	acts := viewActs(a, cols, kBlock)
	bb := dtype.Q4_K.BlockBytes()
	if q5 {
		bb = dtype.Q5_K.BlockBytes()
	}
	var acc [16]float32
	for b := range ns {
		blk := w[b*bb : (b+1)*bb]
		scales, qs := blk[q4KScales:q4KScales+12], blk[q4KQs:]
		if q5 {
			qs = blk[q5KQs:]
		}
		var lane, mins [16]int64
		for i := range kBlock {
			j, c, l := i/32, i/64, i%32 // sub-block j; value i comes from byte 32c+l
			sc, _ := scaleMinK4(j, scales)
			q := qs[32*c+l] >> (4 * (j % 2)) & 0xF
			if q5 {
				q |= (blk[q5KQh+l] >> j & 1) << 4
			}
			lane[(i%64)/4] += int64(sc) * int64(q) * acts.q256(kBlock*b+i)
		}
		for l := range 16 {
			_, m := scaleMinK4(l/2, scales)
			mins[l] = int64(m) * acts.g(16*b+l)
		}
		da := acts.d(b)
		dd, dm := float32(da*f16At(blk, q4KD)), float32(da*f16At(blk, q4KDmin))
		for l := range 16 {
			acc[l] += float32(dd*float32(lane[l])) - float32(dm*float32(mins[l]))
		}
	}
	return combine16(&acc)
}

func dotQ6_K(w, a []byte, cols int) float32 {
	ns := cols / kBlock
	acts := viewActs(a, cols, kBlock)
	bb := dtype.Q6_K.BlockBytes()
	var acc [16]float32
	for b := range ns {
		blk := w[b*bb : (b+1)*bb]
		var lane, corr [16]int64
		for i := range kBlock {
			lane[(i%64)/4] += int64(int8(blk[q6KScales+i/16])) * int64(q6KValue(blk, i)) * acts.q256(kBlock*b+i)
		}
		for l := range 16 {
			corr[l] = 32 * int64(int8(blk[q6KScales+l])) * acts.g(16*b+l)
		}
		dd := float32(acts.d(b) * f16At(blk, q6KD))
		for l := range 16 {
			acc[l] += float32(dd*float32(lane[l])) - float32(dd*float32(corr[l]))
		}
	}
	return combine16(&acc)
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
