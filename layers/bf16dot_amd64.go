//go:build amd64 && !noasm

package layers

import (
	"unsafe"

	"github.com/tpslice/tpslice/vec"
)

// The AVX512_BF16 instructions one register at a time (bf16dot_amd64.s), for the tests that
// pin dpbf16 and roundBF16 to the hardware; they run only where vec.AcceleratedBF16Dot.

// vdpbf16ps16 runs VDPBF16PS on one ZMM register: lane l of acc continued by the products
// of the bf16 pairs x[2l], x[2l+1] and w[2l], w[2l+1].
//
//go:noescape
func vdpbf16ps16(acc *[16]float32, x, w *[32]uint16)

// vcvtneps2bf16x16 runs VCVTNEPS2BF16 on one ZMM register: the 16 floats of f rounded to bf16.
//
//go:noescape
func vcvtneps2bf16x16(dst *[16]uint16, f *[16]float32)

// bf16Dot4AVX512 (bf16dot_kernel_amd64.s) writes outputs 0..3 of each of m ≥ 0 rows of xb
// (row mi at byte offset mi·xstride from x; its 4 outputs at y + mi·ystride bytes, 4
// consecutive floats) against the 4 bf16 weight rows that start at elements off[0..3] of
// w, over n elements: whole 32-element steps, then the last n%32 elements under the mask
// tail = 1<<(n%32) - 1 (zeros beyond). Rows of x go 4 at a time (16 ZMM partial sums),
// the last m%4 one at a time.
//
//go:noescape
func bf16Dot4AVX512(y *float32, ystride int, x *uint16, xstride, m int, w unsafe.Pointer, off *[4]int, n int, tail uint32)

// roundBF16AVX512 (bf16dot_kernel_amd64.s) rounds n&^15 floats of src to bf16 into dst with
// VCVTNEPS2BF16.
//
//go:noescape
func roundBF16AVX512(dst *uint16, src *float32, n int)

// roundBF16Slice is RoundBF16 after validation: VCVTNEPS2BF16 where the CPU has it, the
// last len(x)%16 elements (and every one elsewhere) in Go.
func roundBF16Slice(dst []uint16, x []float32) {
	n := 0
	if vec.AcceleratedBF16Dot() && len(x) >= 16 {
		n = len(x) &^ 15
		roundBF16AVX512(&dst[0], &x[0], n)
	}
	roundBF16SliceGo(dst[n:], x[n:])
}

// bf16DotChunk rows of x share a scratch for a group of fewer than 4 output rows.
const bf16DotChunk = 64

// linearBF16Dot is LinearBF16DotRows after validation: linearBF16DotAVX512 where the CPU
// has AVX512_BF16, else linearBF16DotAVX2 where it has AVX2 and FMA, else the Go
// reference.
func linearBF16Dot(y []float32, xb []uint16, w Matrix, m, o0, o1 int) {
	switch {
	case vec.AcceleratedBF16Dot():
		linearBF16DotAVX512(y, xb, w, m, o0, o1)
	case vec.Accelerated():
		linearBF16DotAVX2(y, xb, w, m, o0, o1)
	default:
		linearBF16DotGo(y, xb, w, m, o0, o1)
	}
}

// linearBF16DotAVX512 is linearBF16Dot on CPUs with AVX512_BF16: bf16Dot4AVX512 on groups
// of 4 consecutive output rows, or in quarters below 4 rows of x (bf16DotQuartersAVX512).
// A last group of fewer than 4 repeats its last row and writes through a scratch, so that
// no column outside [o0, o1) is touched.
func linearBF16DotAVX512(y []float32, xb []uint16, w Matrix, m, o0, o1 int) {
	if m < 4 {
		bf16DotQuartersAVX512(y, xb, w, m, o0, o1)
		return
	}
	in, out := w.Cols, w.Rows
	base := unsafe.Pointer(unsafe.SliceData(w.Data))
	tail := uint32(1)<<(in%32) - 1
	var off [4]int
	var scratch [bf16DotChunk][4]float32
	for ob := o0; ob < o1; ob += 4 {
		nr := min(4, o1-ob)
		for r := range off {
			off[r] = (ob + min(r, nr-1)) * in
		}
		if nr == 4 {
			_ = y[(m-1)*out+ob+3] // the last element the kernel writes
			bf16Dot4AVX512(&y[ob], 4*out, &xb[0], 2*in, m, base, &off, in, tail)
			continue
		}
		for mb := 0; mb < m; mb += bf16DotChunk {
			nm := min(bf16DotChunk, m-mb)
			bf16Dot4AVX512(&scratch[0][0], 16, &xb[mb*in], 2*in, nm, base, &off, in, tail)
			for mi := range nm {
				copy(y[(mb+mi)*out+ob:(mb+mi)*out+ob+nr], scratch[mi][:nr])
			}
		}
	}
}

// bf16DotQuartersAVX512 is linearBF16DotAVX512 for m < 4 rows of x, where the weights'
// stream sets the time: the rows [o0, o1) are split into 4 contiguous quarters of q rows
// and pass p reduces row p of every quarter, so each of the kernel's 4 weight streams walks
// its quarter in order and its prefetch 4 KiB ahead lands in the row its next pass reads
// (quarterRows, as linearRowsAVX2).
func bf16DotQuartersAVX512(y []float32, xb []uint16, w Matrix, m, o0, o1 int) {
	if m == 0 {
		return
	}
	in, out := w.Cols, w.Rows
	base := unsafe.Pointer(unsafe.SliceData(w.Data))
	tail := uint32(1)<<(in%32) - 1
	var off, row [4]int
	var res [4][4]float32
	q := (o1 - o0 + 3) / 4
	for p := range q {
		nr := quarterRows(row[:], o0, o1, q, p)
		for r, o := range row {
			off[r] = o * in
		}
		bf16Dot4AVX512(&res[0][0], 16, &xb[0], 2*in, m, base, &off, in, tail)
		for mi := range m {
			for r := range nr {
				y[mi*out+row[r]] = res[mi][r]
			}
		}
	}
}
