package vec

import "github.com/tpslice/tpslice/dtype"

// tile is how many elements a sum keeps in its accumulator at once: small enough for L1,
// large enough that the per-tile loop overhead vanishes.
const tile = 512

// SumF32 writes the element-wise sum of srcs into dst, adding in the order srcs are given so
// that every caller with the same inputs gets the same bits:
//
//	for i := range dst { acc := srcs[0][i]; for k := 1; k < len(srcs); k++ { acc += srcs[k][i] }; dst[i] = acc }
//
// dst may alias any of srcs. Every src must be at least len(dst) long; srcs must not be empty.
func SumF32(dst []float32, srcs [][]float32) {
	var acc [tile]float32
	for lo := 0; lo < len(dst); lo += tile {
		hi := min(lo+tile, len(dst))
		a := acc[:hi-lo]
		copy(a, srcs[0][lo:hi])
		for _, s := range srcs[1:] {
			AddF32(a, s[lo:hi])
		}
		copy(dst[lo:hi], a)
	}
}

// Sum16 is SumF32 for bf16 or f16 inputs (dtype t): it widens each element to f32,
// accumulates in f32 in srcs order and rounds once to nearest even:
//
//	for i := range dst { acc := widen(srcs[0][i]); for k ≥ 1 { acc += widen(srcs[k][i]) }; dst[i] = narrow(acc) }
func Sum16(t dtype.DType, dst []uint16, srcs [][]uint16) {
	var acc, wide [tile]float32
	for lo := 0; lo < len(dst); lo += tile {
		hi := min(lo+tile, len(dst))
		a, w := acc[:hi-lo], wide[:hi-lo]
		Widen(t, a, srcs[0][lo:hi])
		for _, s := range srcs[1:] {
			Widen(t, w, s[lo:hi])
			AddF32(a, w)
		}
		Narrow(t, dst[lo:hi], a)
	}
}

// Sum16ToF32 is Sum16 without the final rounding: it leaves the f32 sums in dst, as
// multimem.ld_reduce with f32 accumulation returns them.
func Sum16ToF32(t dtype.DType, dst []float32, srcs [][]uint16) {
	var wide [tile]float32
	Widen(t, dst, srcs[0][:len(dst)])
	for lo := 0; lo < len(dst); lo += tile {
		hi := min(lo+tile, len(dst))
		w := wide[:hi-lo]
		for _, s := range srcs[1:] {
			Widen(t, w, s[lo:hi])
			AddF32(dst[lo:hi], w)
		}
	}
}

// AddF32 adds src into dst element-wise:
//
//	for i := range dst { dst[i] += src[i] }
//
// src must be at least len(dst) long.
func AddF32(dst, src []float32) {
	src = src[:len(dst)]
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		d, s := dst[i:i+8:i+8], src[i:i+8:i+8]
		d[0] += s[0]
		d[1] += s[1]
		d[2] += s[2]
		d[3] += s[3]
		d[4] += s[4]
		d[5] += s[5]
		d[6] += s[6]
		d[7] += s[7]
	}
	for ; i < len(dst); i++ {
		dst[i] += src[i]
	}
}
