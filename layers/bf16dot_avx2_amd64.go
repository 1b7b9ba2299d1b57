//go:build amd64 && !noasm

package layers

import "unsafe"

// bf16Dot4AVX2 (bf16dot_avx2_amd64.s) continues acc[r], the 16 partial sums of output r =
// 0..3, by steps ≥ 0 whole 32-element steps of one row of x against the 4 bf16 weight rows
// that start at elements off[0..3] of w: lane l takes pair 16j+l of step j, as dpbf16
// (VDPBF16PS emulated with FMA under MXCSR's DAZ and FTZ).
//
//go:noescape
func bf16Dot4AVX2(acc *[4][16]float32, x *uint16, w unsafe.Pointer, off *[4]int, steps int)

// linearBF16DotAVX2 is LinearBF16DotRows after validation on CPUs with AVX2 and FMA but not
// AVX512_BF16: bf16Dot4AVX2 over the whole 32-element steps of each row of x against 4
// output rows at a time, then the last pairs and the lanes' combining in Go (dpbf16Pairs,
// combine16), so the bits are the reference's. A last group of fewer than 4 repeats its
// last row, whose sums are dropped.
func linearBF16DotAVX2(y []float32, xb []uint16, w Matrix, m, o0, o1 int) {
	in, out := w.Cols, w.Rows
	wb := w.Bits()
	base := unsafe.Pointer(unsafe.SliceData(w.Data))
	steps := in / 32
	var off [4]int
	for ob := o0; ob < o1; ob += 4 {
		nr := min(4, o1-ob)
		for r := range off {
			off[r] = (ob + min(r, nr-1)) * in
		}
		for mi := range m {
			x := xb[mi*in : (mi+1)*in]
			var acc [4][16]float32
			if steps > 0 {
				bf16Dot4AVX2(&acc, &x[0], base, &off, steps)
			}
			for r := range nr {
				dpbf16Pairs(&acc[r], x, wb[off[r]:off[r]+in], 16*steps)
				y[mi*out+ob+r] = combine16(&acc[r])
			}
		}
	}
}
