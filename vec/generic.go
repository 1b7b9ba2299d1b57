package vec

import "github.com/tpslice/tpslice/dtype"

// This file holds the portable implementations. They are the whole package on other
// architectures and under the noasm build tag, the fallback on amd64 CPUs without AVX2 and
// F16C, and the baseline the benchmarks compare the assembly against. Each computes exactly
// the reference loop of its exported counterpart. Callers have already checked lengths.

// tile is how many elements a sum keeps in its accumulator at once: small enough for L1,
// large enough that the per-tile loop overhead vanishes.
const tile = 512

// addF32Go is AddF32 in Go; len(src) ≥ len(dst).
func addF32Go(dst, src []float32) {
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

// widenBF16Go is Widen(dtype.BF16, …) in Go.
func widenBF16Go(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, h := range src {
		dst[i] = dtype.BF16ToF32(h)
	}
}

// widenF16Go is Widen(dtype.F16, …) in Go.
func widenF16Go(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, h := range src {
		dst[i] = dtype.F16ToF32(h)
	}
}

// narrowBF16Go is Narrow(dtype.BF16, …) in Go.
func narrowBF16Go(dst []uint16, src []float32) {
	src = src[:len(dst)]
	for i, f := range src {
		dst[i] = dtype.F32ToBF16(f)
	}
}

// narrowF16Go is Narrow(dtype.F16, …) in Go.
func narrowF16Go(dst []uint16, src []float32) {
	src = src[:len(dst)]
	for i, f := range src {
		dst[i] = dtype.F32ToF16(f)
	}
}

// widenGo is Widen in Go.
func widenGo(t dtype.DType, dst []float32, src []uint16) {
	if t == dtype.BF16 {
		widenBF16Go(dst, src)
		return
	}
	widenF16Go(dst, src)
}

// narrowGo is Narrow in Go.
func narrowGo(t dtype.DType, dst []uint16, src []float32) {
	if t == dtype.BF16 {
		narrowBF16Go(dst, src)
		return
	}
	narrowF16Go(dst, src)
}

// sumF32Go is SumF32 in Go, tiled so that the running sums stay in L1.
func sumF32Go(dst []float32, srcs [][]float32) {
	var acc [tile]float32
	for lo := 0; lo < len(dst); lo += tile {
		hi := min(lo+tile, len(dst))
		a := acc[:hi-lo]
		copy(a, srcs[0][lo:hi])
		for _, s := range srcs[1:] {
			addF32Go(a, s[lo:hi])
		}
		copy(dst[lo:hi], a)
	}
}

// sum16Go is Sum16 in Go, tiled like sumF32Go.
func sum16Go(t dtype.DType, dst []uint16, srcs [][]uint16) {
	var acc, wide [tile]float32
	for lo := 0; lo < len(dst); lo += tile {
		hi := min(lo+tile, len(dst))
		a, w := acc[:hi-lo], wide[:hi-lo]
		widenGo(t, a, srcs[0][lo:hi])
		for _, s := range srcs[1:] {
			widenGo(t, w, s[lo:hi])
			addF32Go(a, w)
		}
		narrowGo(t, dst[lo:hi], a)
	}
}

// sum16ToF32Go is Sum16ToF32 in Go, tiled like sumF32Go.
func sum16ToF32Go(t dtype.DType, dst []float32, srcs [][]uint16) {
	var wide [tile]float32
	widenGo(t, dst, srcs[0][:len(dst)])
	for lo := 0; lo < len(dst); lo += tile {
		hi := min(lo+tile, len(dst))
		w := wide[:hi-lo]
		for _, s := range srcs[1:] {
			widenGo(t, w, s[lo:hi])
			addF32Go(dst[lo:hi], w)
		}
	}
}
