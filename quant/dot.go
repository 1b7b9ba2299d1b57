package quant

import (
	"encoding/binary"
	"math"

	"github.com/tpslice/tpslice/dtype"
)

// Dot computes outputs [o0, o1) of y = x·Wᵀ for the m rows of activations quantized in xq
// (format ActsFor(t), ActsFor(t).RowBytes(cols) bytes per row) against the device matrix
// W (rows × cols values of t, as Pack leaves them): y[i·ystride + o] for rows i of x and
// weight rows o; o0 is a multiple of RowAlign(t), and so is o1 unless it is rows.
// Products of weights and quantized activations are exact integer sums; the float
// arithmetic after them has one fixed order per output, so the result is deterministic and
// the same for any m, any split of [o0, o1) and on every kernel (AVX-512, AVX2, Go): a GEMM
// row is bitwise the GEMV of that row. From 4 rows of activations (8 for Q6_K), every type
// runs a GEMM on AVX-512 VNNI CPUs (gemm_avx512_amd64.s: each quad of
// weights made ready once for four rows; gemm8_avx512_amd64.s: for eight, Q4_0's), fewer
// rows and other CPUs the GEMV kernel once per row. The reference loops, with qa, da the activation block's values and scale:
//
//	Q8_0, Q4_0 (row r of a grouped matrix, blocks b of 32, w the int8, or nibble - 8):
//		var acc float32
//		for b := range nb { acc += float32(float32(dw_b*da_b) * float32(Σ_i w_i*qa_i)) }
//	Q5_0: that loop with w the five bits q less 16. Q5_1: with w = q, plus a term of the
//	block's min m_b and the activations' block sum s_b = Σ_i qa_i:
//		for b := range nb {
//			acc += float32(float32(dw_b*da_b)*float32(Σ_i w_i*qa_i)) +
//				float32(float32(m_b*da_b)*float32(s_b))
//		}
//	Q4_K, Q5_K (row r of a grouped matrix, super-blocks b of 256, sub-blocks j of 32 with
//	6-bit sc_j, m_j, values q of 4 or 5 bits; g_k the activations' sums over values
//	16k..16k+15; the integers exact):
//		var acc float32
//		for b := range ns {
//			isum := Σ_j sc_j * Σ_{i in j} q_i*qa_i
//			msum := Σ_j m_j * (g_2j + g_2j+1)
//			dd, dm := float32(da*d), float32(da*dmin)
//			acc += float32(dd*float32(isum)) - float32(dm*float32(msum))
//		}
//	Q6_K (row r of a grouped matrix, 16 groups k of 16 values with int8 sc_k, stored
//	values u = q + 32):
//		var acc float32
//		for b := range ns { acc += float32(float32(da*d) * float32(Σ_i sc_{i/16}*(u_i-32)*qa_i)) }
//
// It does not check its arguments (layers does) and does not allocate.
func Dot(t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, rows, cols, o0, o1 int) {
	dotRows(t, y, ystride, xq, m, w, rows, cols, o0, o1)
}

// dotRowsGo is Dot in portable Go, one output at a time.
func dotRowsGo(t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, rows, cols, o0, o1 int) {
	arb, dot := ActsFor(t).RowBytes(cols), groupDots[t]
	for i := range m {
		a := xq[i*arb : (i+1)*arb]
		for o := o0; o < o1; o++ {
			y[i*ystride+o] = dot(w, o, a, cols)
		}
	}
}

// groupDots hold the reference dot product of row r of a grouped matrix of each type;
// never written.
var groupDots = map[dtype.DType]func(w []byte, r int, a []byte, cols int) float32{
	dtype.Q8_0: func(w []byte, r int, a []byte, cols int) float32 { return dot32(dtype.Q8_0, w, r, a, cols) },
	dtype.Q4_0: func(w []byte, r int, a []byte, cols int) float32 { return dot32(dtype.Q4_0, w, r, a, cols) },
	dtype.Q5_0: func(w []byte, r int, a []byte, cols int) float32 { return dot32(dtype.Q5_0, w, r, a, cols) },
	dtype.Q5_1: func(w []byte, r int, a []byte, cols int) float32 { return dot32(dtype.Q5_1, w, r, a, cols) },
	dtype.Q4_K: func(w []byte, r int, a []byte, cols int) float32 { return dotK4(dtype.Q4_K, w, r, a, cols) },
	dtype.Q5_K: func(w []byte, r int, a []byte, cols int) float32 { return dotK4(dtype.Q5_K, w, r, a, cols) },
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

// dot32 is the reference of row r of a grouped Q8_0, Q4_0, Q5_0 or Q5_1 matrix w.
func dot32(t dtype.DType, w []byte, r int, a []byte, cols int) float32 {
	nb, rr := cols/32, r%GroupRows
	acts := viewActs(a, cols, 32)
	scaleAt := 256 + 2*rr
	weight := func(blk []byte, i int) int64 { return int64(quadValue(blk, i, rr)) - 8 }
	switch t {
	case dtype.Q8_0:
		scaleAt = 512 + 2*rr
		weight = func(blk []byte, i int) int64 { return int64(int8(blk[q8At(i, rr)])) }
	case dtype.Q5_0:
		scaleAt = gq5D + 2*rr
		weight = func(blk []byte, i int) int64 { return int64(q5Value(blk, i, rr)) - 16 }
	case dtype.Q5_1:
		scaleAt = gq5D + 2*rr
		weight = func(blk []byte, i int) int64 { return int64(q5Value(blk, i, rr)) }
	}
	var acc float32
	for b := range nb {
		blk := groupBlock(t, w, r, b, nb)
		var isum int64
		for i := range 32 {
			isum += weight(blk, i) * acts.planeValue(32*b+i, 32)
		}
		da := acts.d(b)
		term := float32(float32(f16At(blk, scaleAt)*da) * float32(isum))
		if t == dtype.Q5_1 {
			term += float32(float32(f16At(blk, gq51M+2*rr)*da) * float32(acts.g(b)))
		}
		acc += term
	}
	return acc
}

// dotK4 is the reference of row r of a grouped Q4_K or Q5_K matrix w.
func dotK4(t dtype.DType, w []byte, r int, a []byte, cols int) float32 {
	ns, rr := cols/kBlock, r%GroupRows
	acts := viewActs(a, cols, kBlock)
	scalesAt := gq4KScales
	if t == dtype.Q5_K {
		scalesAt = gq5KScales
	}
	var acc float32
	for b := range ns {
		blk := groupBlock(t, w, r, b, ns)
		scales := groupScalesK4(blk, rr, scalesAt)
		var isum, msum int64
		for j := range 8 {
			sc, m := scaleMinK4(j, scales[:])
			var s int64
			for i := 32 * j; i < 32*(j+1); i++ {
				q := quadValue(blk, i, rr)
				if t == dtype.Q5_K {
					q |= fifthAt(blk, gq5KFifth, i, rr) << 4
				}
				s += int64(q) * acts.q256(kBlock*b+i)
			}
			isum += int64(sc) * s
			msum += int64(m) * (acts.g(16*b+2*j) + acts.g(16*b+2*j+1))
		}
		d := scalesAt + 12*GroupRows + 2*rr
		da := acts.d(b)
		dd, dm := float32(da*f16At(blk, d)), float32(da*f16At(blk, d+2*GroupRows))
		acc += float32(dd*float32(isum)) - float32(dm*float32(msum))
	}
	return acc
}

// dotQ6_K is the reference of row r of a grouped Q6_K matrix w.
func dotQ6_K(w []byte, r int, a []byte, cols int) float32 {
	ns, rr := cols/kBlock, r%GroupRows
	acts := viewActs(a, cols, kBlock)
	var acc float32
	for b := range ns {
		blk := groupBlock(dtype.Q6_K, w, r, b, ns)
		var isum int64
		for i := range kBlock {
			sc := int64(int8(blk[gq6KScales+GroupRows*(i/16)+rr]))
			isum += sc * int64(q6Value(blk, i, rr)-32) * acts.q256(kBlock*b+i)
		}
		dd := float32(acts.d(b) * f16At(blk, gq6KD+2*rr))
		acc += float32(dd * float32(isum))
	}
	return acc
}
