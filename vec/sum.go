package vec

import "github.com/tpslice/tpslice/dtype"

// SumF32 writes the element-wise sum of srcs into dst, adding in the order srcs are given so
// that every caller with the same inputs gets the same bits:
//
//	for i := range dst { acc := srcs[0][i]; for k := 1; k < len(srcs); k++ { acc += srcs[k][i] }; dst[i] = acc }
//
// dst may alias any of srcs. Every src must be at least len(dst) long; srcs must not be empty.
func SumF32(dst []float32, srcs [][]float32) {
	if len(dst) == 0 {
		return
	}
	for _, s := range srcs {
		_ = s[:len(dst)]
	}
	sumF32(dst, srcs)
}

// Sum16 is SumF32 for bf16 or f16 inputs (dtype t): it widens each element to f32,
// accumulates in f32 in srcs order and rounds once to nearest even:
//
//	for i := range dst { acc := widen(srcs[0][i]); for k ≥ 1 { acc += widen(srcs[k][i]) }; dst[i] = narrow(acc) }
//
// dst may alias any of srcs. Every src must be at least len(dst) long; srcs must not be empty.
func Sum16(t dtype.DType, dst []uint16, srcs [][]uint16) {
	if len(dst) == 0 {
		return
	}
	for _, s := range srcs {
		_ = s[:len(dst)]
	}
	sum16(t, dst, srcs)
}

// Sum16ToF32 is Sum16 without the final rounding: it leaves the f32 sums in dst, as
// multimem.ld_reduce with f32 accumulation returns them:
//
//	for i := range dst { acc := widen(srcs[0][i]); for k ≥ 1 { acc += widen(srcs[k][i]) }; dst[i] = acc }
//
// Every src must be at least len(dst) long; srcs must not be empty.
func Sum16ToF32(t dtype.DType, dst []float32, srcs [][]uint16) {
	if len(dst) == 0 {
		return
	}
	for _, s := range srcs {
		_ = s[:len(dst)]
	}
	sum16ToF32(t, dst, srcs)
}

// AddF32 adds src into dst element-wise:
//
//	for i := range dst { dst[i] += src[i] }
//
// src must be at least len(dst) long. On amd64 with AVX2 it runs VADDPS, 32 elements an
// iteration, bitwise identical to the loop.
func AddF32(dst, src []float32) {
	addF32(dst, src[:len(dst)])
}
