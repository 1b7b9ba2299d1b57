//go:build amd64 && !noasm

package quant

import "github.com/tpslice/tpslice/dtype"

// The GEMM kernels (gemm_avx512_amd64.s): one group of 16 weight rows against gemmRows rows
// of activations over n blocks, continuing the sums in y. See the file for the contract.

//go:noescape
func gemmQ8_0AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)

//go:noescape
func gemmQ4_0AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)

//go:noescape
func gemmQ4_KAVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)

//go:noescape
func gemmQ5_KAVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)

//go:noescape
func gemmQ5_0AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)

//go:noescape
func gemmQ5_1AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)

//go:noescape
func gemmQ6_KAVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)

// The eight-row GEMM kernels (gemm8_avx512_amd64.s): the four-row kernels' contract for
// gemmRows8 rows of activations.

//go:noescape
func gemm8Q4_0AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)

// gemmKernel is a GEMM kernel's signature.
type gemmKernel func(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)

// gemmType is a type's GEMM kernel, the least M that Dot runs it for, and the blocks of
// its span of columns. From: BenchmarkGEMMPaths' medians of 5 rounds at medium's shapes
// (docs/benchmarks/decode.md) put the Q8_0 and Q4_0 kernels at 1.15-2.3× the GEMV once per
// row at M = 4 (0.81-2.46× in a more loaded round), Q4_K's at 1.56×, Q6_K's at 0.92-0.99×
// at M = 4 and 1.3× at M = 8; the Q5 types' (which prefetch their weights, as the GEMVs
// do) at 1.31-2.21× at M = 4, 0.57-0.71× without the prefetch. Span: a group's weights of a span (17 KiB of Q8_0, 9 KiB of Q4_0, 11 KiB of Q5_0, 12
// KiB of Q5_1, 13.5 KiB of Q4_K and Q5_K, 13 KiB of Q6_K) stay in L1 while every row of x
// passes over them, and the rows' activations of it (2.3-3.4 KiB a row, at most 435 KiB
// for 128 rows) stay in L2 while every group passes over them.
// eight, where a type has one, takes the rows in eights before the last four: Q4_0's
// (1.06× the four-row tiles' batch-16 decode of medium; Q8_0's, the same code, was
// 0.87-0.95× there though 1.07× in BenchmarkGEMMTile, so Q8_0 has none: docs/benchmarks/
// quantized.md, "Eight-row tiles").
type gemmType struct {
	kernel, eight gemmKernel
	from, span    int
}

// avx512GEMMs are the GEMM kernels of the types that have one; written only by
// TestDotRunsGEMM, which counts a kernel's calls.
var avx512GEMMs = map[dtype.DType]gemmType{
	dtype.Q8_0: {gemmQ8_0AVX512, nil, 4, 32},
	dtype.Q4_0: {gemmQ4_0AVX512, gemm8Q4_0AVX512, 4, 32},
	dtype.Q4_K: {gemmQ4_KAVX512, nil, 4, 6},
	dtype.Q6_K: {gemmQ6_KAVX512, nil, 8, 4},
	dtype.Q5_K: {gemmQ5_KAVX512, nil, 4, 5},
	dtype.Q5_0: {gemmQ5_0AVX512, nil, 4, 32},
	dtype.Q5_1: {gemmQ5_1AVX512, nil, 4, 32},
}

// gemmRows (gemmRows8 for an eight-row kernel) rows of activations share each quad of
// weights a kernel makes ready.
const gemmRows, gemmRows8 = 4, 8

// gemmGroupsAsm is Dot for m ≥ gemmRows rows of activations with the GEMM k: the whole
// groups of [o0, o1) against the rows in eights where k has an eight-row kernel (the last
// four of a multiple of four in a four-row tile), else in fours, a span of k.span blocks at a time (every
// group, then the next span), each output's blocks still added in order; the rows left
// over (m%4) and a last group cut by the matrix's end go to the GEMV kernel g. Every
// output is bitwise the GEMV's.
func gemmGroupsAsm(k gemmType, g groupKernel, t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, rows, cols, o0, o1 int) {
	if o0 >= o1 || m == 0 {
		return
	}
	gb, arb, n := GroupRows*t.Bytes(cols), ActsFor(t).RowBytes(cols), cols/t.BlockSize()
	bb, bs := GroupRows*t.BlockBytes(), t.BlockSize()
	sumsPerBlock := bs / ActsFor(t).sumSpan()
	whole, g0 := (o1-o0)/GroupRows, o0/GroupRows
	m4 := m / gemmRows * gemmRows
	if whole > 0 && m4 > 0 {
		_ = xq[m4*arb-1]
		_ = w[(g0+whole)*gb-1]
		_ = y[(m4-1)*ystride+o0+GroupRows*whole-1]
		for i := range m4 {
			clear(y[i*ystride+o0 : i*ystride+o0+GroupRows*whole])
		}
		for c0 := 0; c0 < n; c0 += k.span {
			nc := min(k.span, n-c0)
			for j := range whole {
				wc := &w[(g0+j)*gb+c0*bb]
				for i := 0; i < m4; {
					kern, tile := k.kernel, gemmRows
					if k.eight != nil && m4-i >= gemmRows8 {
						kern, tile = k.eight, gemmRows8
					}
					a := xq[i*arb:]
					kern(&y[i*ystride+o0+GroupRows*j], ystride, wc, nc,
						&a[2*bs*c0], &a[2*bs*n+4*c0], &a[(2*bs+4)*n+4*sumsPerBlock*c0], arb)
					i += tile
				}
			}
		}
	}
	if end := o0 + GroupRows*whole; end < o1 && m4 > 0 {
		dotGroupsAsm(g, t, y, ystride, xq, m4, w, rows, cols, end, o1)
	}
	if m4 < m {
		dotGroupsAsm(g, t, y[m4*ystride:], ystride, xq[m4*arb:], m-m4, w, rows, cols, o0, o1)
	}
}
