package layers

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// RoundBF16 rounds activations to bf16 for LinearBF16DotRows, element by element as
// VCVTNEPS2BF16 does (roundBF16: nearest, ties to even, subnormals read as zero):
// dst[i] = roundBF16(x[i]). len(dst) ≥ len(x). It does not allocate.
func RoundBF16(dst []uint16, x []float32) error {
	if len(dst) < len(x) {
		return fmt.Errorf("layers: round bf16: len(dst)=%d < len(x)=%d", len(dst), len(x))
	}
	roundBF16Slice(dst[:len(x)], x)
	return nil
}

// LinearBF16DotRows computes the outputs [o0, o1) of a linear layer without bias whose
// weights are bf16, from activations already rounded to bf16 (RoundBF16), with llama.cpp's
// arithmetic for bf16 matrices: VDPBF16PS, two bf16 products per f32 lane and instruction.
// xb is [M, in] and y [M, out], row-major, M = len(y)/w.Rows. Each output has 16 partial
// sums; pair p of the row (elements 2p, 2p+1; an odd row's last pair padded with zeros)
// goes to lane p%16 by dpbf16, and the lanes combine in combine16's tree:
//
//	for m := range M {
//		for o := o0; o < o1; o++ {
//			var acc [16]float32
//			for p := range (in+1)/2 {
//				acc[p%16] = dpbf16(acc[p%16], xb[m*in+2p], xb[m*in+2p+1], W[o*in+2p], W[o*in+2p+1]) // 0 past in
//			}
//			y[m*out+o] = combine16(&acc)
//		}
//	}
//
// The order does not depend on M or on the split of the rows, so a GEMM row is bitwise the
// GEMV of that row. On CPUs with AVX512_BF16 (vec.AcceleratedBF16Dot) it runs
// bf16Dot4AVX512 (4 weight rows against 4 rows of x at a time, 16 ZMM partial sums); on
// CPUs with AVX2 and FMA alone, bf16Dot4AVX2 (VDPBF16PS emulated, 4 weight rows against one
// row of x); elsewhere the reference loop in Go, the same bits and far slower. Only columns [o0, o1)
// of y are written. It does not allocate.
func LinearBF16DotRows(y []float32, xb []uint16, w Matrix, o0, o1 int) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("layers: linear bf16 dot: weight %w", err)
	}
	if w.DType != dtype.BF16 {
		return fmt.Errorf("layers: linear bf16 dot: weights are %v, want bf16", w.DType)
	}
	in, out := w.Cols, w.Rows
	if len(y)%out != 0 {
		return fmt.Errorf("layers: linear bf16 dot: len(y)=%d is not a multiple of out=%d", len(y), out)
	}
	m := len(y) / out
	if len(xb) != m*in {
		return fmt.Errorf("layers: linear bf16 dot: len(xb)=%d, want M·in = %d·%d = %d", len(xb), m, in, m*in)
	}
	if o0 < 0 || o0 > o1 || o1 > out {
		return fmt.Errorf("layers: linear bf16 dot: output rows [%d, %d) not within [0, %d)", o0, o1, out)
	}
	linearBF16Dot(y, xb, w, m, o0, o1)
	return nil
}

// linearBF16DotGo is LinearBF16DotRows after validation, the reference loop.
func linearBF16DotGo(y []float32, xb []uint16, w Matrix, m, o0, o1 int) {
	in, out := w.Cols, w.Rows
	wb := w.Bits()
	for mi := range m {
		for o := o0; o < o1; o++ {
			y[mi*out+o] = dpbf16Dot(xb[mi*in:(mi+1)*in], wb[o*in:(o+1)*in])
		}
	}
}

// dpbf16Dot is one output of LinearBF16DotRows' reference loop: the dot product of the bf16
// rows x and w (len(w) ≥ len(x)).
func dpbf16Dot(x, w []uint16) float32 {
	var acc [16]float32
	dpbf16Pairs(&acc, x, w, 0)
	return combine16(&acc)
}

// dpbf16Pairs continues the 16 partial sums acc of the bf16 rows x and w (len(w) ≥ len(x))
// from pair p0 to the last, an odd row's last pair padded with zeros.
func dpbf16Pairs(acc *[16]float32, x, w []uint16, p0 int) {
	n := len(x)
	for p := p0; p < (n+1)/2; p++ {
		x1, w1 := uint16(0), uint16(0)
		if 2*p+1 < n {
			x1, w1 = x[2*p+1], w[2*p+1]
		}
		acc[p%16] = dpbf16(acc[p%16], x[2*p], x1, w[2*p], w1)
	}
}

// combine16 sums 16 partial sums in the tree of a ZMM horizontal add: lanes l and l+8,
// then l+4, l+2, l+1.
func combine16(a *[16]float32) float32 {
	var s [8]float32
	for l := range 8 {
		s[l] = a[l] + a[l+8]
	}
	for l := range 4 {
		s[l] += s[l+4]
	}
	s[0], s[1] = s[0]+s[2], s[1]+s[3]
	return s[0] + s[1]
}

// roundBF16SliceGo is RoundBF16 after validation in Go.
func roundBF16SliceGo(dst []uint16, x []float32) {
	for i, v := range x {
		dst[i] = roundBF16(v)
	}
}
