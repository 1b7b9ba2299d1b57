//go:build amd64 && !noasm

package vec

import "github.com/tpslice/tpslice/dtype"

// sumChunk bounds how many elements one call of an n-way sum kernel covers, so that a
// goroutine stuck in assembly (which cannot be preempted asynchronously) yields within a
// few hundred microseconds even for long slices.
const sumChunk = 1 << 15

// The AVX2 kernels (kernels_amd64.s). n is the element count; the pointers address n valid
// elements. The sum kernels also take off (their first element in every source) and need
// n > 0 and a multiple of 32.

//go:noescape
func addF32AVX2(dst, src *float32, n int)

//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func widenF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func narrowBF16AVX2(dst *uint16, src *float32, n int)

//go:noescape
func narrowF16AVX2(dst *uint16, src *float32, n int)

//go:noescape
func sumF32AVX2(dst *float32, srcs *[]float32, nsrc, off, n int)

//go:noescape
func sum16BF16AVX2(dst *uint16, srcs *[]uint16, nsrc, off, n int)

//go:noescape
func sum16F16AVX2(dst *uint16, srcs *[]uint16, nsrc, off, n int)

//go:noescape
func sum16ToF32BF16AVX2(dst *float32, srcs *[]uint16, nsrc, off, n int)

//go:noescape
func sum16ToF32F16AVX2(dst *float32, srcs *[]uint16, nsrc, off, n int)

// addF32 is AddF32 after the length check: len(src) == len(dst).
func addF32(dst, src []float32) {
	if !useAVX2 || len(dst) == 0 {
		addF32Go(dst, src)
		return
	}
	addF32AVX2(&dst[0], &src[0], len(dst))
}

// widen is Widen after the length check: len(src) == len(dst).
func widen(t dtype.DType, dst []float32, src []uint16) {
	switch {
	case !useAVX2 || len(dst) == 0:
		widenGo(t, dst, src)
	case t == dtype.BF16:
		widenBF16AVX2(&dst[0], &src[0], len(dst))
	default:
		widenF16AVX2(&dst[0], &src[0], len(dst))
	}
}

// narrow is Narrow after the length check: len(src) == len(dst).
func narrow(t dtype.DType, dst []uint16, src []float32) {
	switch {
	case !useAVX2 || len(dst) == 0:
		narrowGo(t, dst, src)
	case t == dtype.BF16:
		narrowBF16AVX2(&dst[0], &src[0], len(dst))
	default:
		narrowF16AVX2(&dst[0], &src[0], len(dst))
	}
}

// sumF32 is SumF32 after the length checks: srcs is not empty and every src is at least
// len(dst) long.
func sumF32(dst []float32, srcs [][]float32) {
	if !useAVX2 {
		sumF32Go(dst, srcs)
		return
	}
	body := len(dst) &^ 31
	for off := 0; off < body; off += sumChunk {
		sumF32AVX2(&dst[off], &srcs[0], len(srcs), off, min(sumChunk, body-off))
	}
	for i := body; i < len(dst); i++ {
		acc := srcs[0][i]
		for _, s := range srcs[1:] {
			acc += s[i]
		}
		dst[i] = acc
	}
}

// sum16 is Sum16 after the length checks (see sumF32).
func sum16(t dtype.DType, dst []uint16, srcs [][]uint16) {
	if !useAVX2 {
		sum16Go(t, dst, srcs)
		return
	}
	body := len(dst) &^ 31
	for off := 0; off < body; off += sumChunk {
		n := min(sumChunk, body-off)
		if t == dtype.BF16 {
			sum16BF16AVX2(&dst[off], &srcs[0], len(srcs), off, n)
		} else {
			sum16F16AVX2(&dst[off], &srcs[0], len(srcs), off, n)
		}
	}
	for i := body; i < len(dst); i++ {
		acc := dtype.ToF32(t, srcs[0][i])
		for _, s := range srcs[1:] {
			acc += dtype.ToF32(t, s[i])
		}
		dst[i] = narrowOne(t, acc)
	}
}

// sum16ToF32 is Sum16ToF32 after the length checks (see sumF32).
func sum16ToF32(t dtype.DType, dst []float32, srcs [][]uint16) {
	if !useAVX2 {
		sum16ToF32Go(t, dst, srcs)
		return
	}
	body := len(dst) &^ 31
	for off := 0; off < body; off += sumChunk {
		n := min(sumChunk, body-off)
		if t == dtype.BF16 {
			sum16ToF32BF16AVX2(&dst[off], &srcs[0], len(srcs), off, n)
		} else {
			sum16ToF32F16AVX2(&dst[off], &srcs[0], len(srcs), off, n)
		}
	}
	for i := body; i < len(dst); i++ {
		acc := dtype.ToF32(t, srcs[0][i])
		for _, s := range srcs[1:] {
			acc += dtype.ToF32(t, s[i])
		}
		dst[i] = acc
	}
}

// narrowOne narrows one element as Narrow does (BF16, else F16).
func narrowOne(t dtype.DType, f float32) uint16 {
	if t == dtype.BF16 {
		return dtype.F32ToBF16(f)
	}
	return dtype.F32ToF16(f)
}
