//go:build amd64 && !noasm

package layers

import (
	"unsafe"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// The blocking of linearRowsAVX2; none of it changes the result (see linear_amd64.s).
const (
	// linearTileAVX2 elements of 4 weight rows (8 KiB of f32) stay in L1 while up to 64
	// rows of x pass over them.
	linearTileAVX2 = 512
	// linearCallAVX2 bounds the elements one GEMV kernel call covers, so that a goroutine
	// in assembly (which cannot be preempted) yields within microseconds on any row length.
	linearCallAVX2 = 1 << 15
)

// The AVX2 kernels (linear_amd64.s), one per weight dtype. Each continues the partial sums
// acc[mi] (m consecutive [4][8] blocks) of rows mi = 0..m-1 of x (row mi at byte offset
// mi·xstride from x) against the 4 weight rows that start at elements off[0..3] of w, the
// matrix's data (f32, or the 16-bit words of bf16 or f16), over n elements: n > 0 and a
// multiple of 8, m ≥ 0. Pairs of rows of x share every weight load (a 2×4 block of YMM
// accumulators), an odd last row runs alone (1×4).

//go:noescape
func linear4F32AVX2(acc *[linearRowBlock][Lanes]float32, x *float32, xstride, m int, w unsafe.Pointer, off *[linearRowBlock]int, n int)

//go:noescape
func linear4BF16AVX2(acc *[linearRowBlock][Lanes]float32, x *float32, xstride, m int, w unsafe.Pointer, off *[linearRowBlock]int, n int)

//go:noescape
func linear4F16AVX2(acc *[linearRowBlock][Lanes]float32, x *float32, xstride, m int, w unsafe.Pointer, off *[linearRowBlock]int, n int)

// linearRows is LinearRows after validation: the assembly where the CPU runs it, the
// AVX-512 GEMM from gemmMinRows rows of x where the CPU has AVX-512, else the AVX2
// kernels.
func linearRows(y, x []float32, w Matrix, m, o0, o1 int) {
	switch {
	case !vec.Accelerated():
		linearRowsGo(y, x, w, m, o0, o1)
	case m >= gemmMinRows(w.DType) && vec.AcceleratedAVX512():
		linearRowsAVX512(y, x, w, m, o0, o1)
	default:
		linearRowsAVX2(y, x, w, m, o0, o1)
	}
}

// linearRowsAVX2 is LinearRows after validation with the AVX2 kernels. For each block of 4
// output rows (one from each quarter of [o0, o1)) and each chunk of up to 64 rows of x, the
// kernels reduce the first in&^7 elements (one pass over whole rows for M = 1; for M > 1,
// 512-element tiles of the 4 weight rows that every row of x visits while they sit in L1),
// then Go fuses the last in%8 products into lanes 0.. and combines the lanes in combine8's
// tree. Every output's order is the reference loop's whatever the blocking, so any M and any
// split of the rows give the same bits.
func linearRowsAVX2(y, x []float32, w Matrix, m, o0, o1 int) {
	in := w.Cols
	body := in &^ (Lanes - 1)
	base := unsafe.Pointer(unsafe.SliceData(w.Data))
	var acc [linearMChunk][linearRowBlock][Lanes]float32
	var off [linearRowBlock]int
	var row [linearRowBlock]int
	// The rows [o0, o1) are split into 4 contiguous quarters of q rows (the last ones may
	// be shorter or empty); pass p reduces row p of every quarter, so each of the 4 weight
	// streams walks its quarter sequentially, as the hardware prefetcher likes. A quarter
	// without a row p repeats row p of the first quarter (read from cache, result unused).
	q := (o1 - o0 + linearRowBlock - 1) / linearRowBlock
	for p := range q {
		nr := quarterRows(row[:], o0, o1, q, p)
		for mb := 0; mb < m; mb += linearMChunk {
			nm := min(linearMChunk, m-mb)
			clear(acc[:nm])
			tile := linearTileAVX2
			if nm == 1 {
				tile = linearCallAVX2
			}
			for k := 0; k < body; k += tile {
				kl := min(tile, body-k)
				for r, o := range row {
					off[r] = o*in + k
				}
				_ = x[(mb+nm-1)*in+k+kl-1] // the last element the kernel reads
				linear4AVX2(w.DType, &acc[0], &x[mb*in+k], 4*in, nm, base, &off, kl)
			}
			for mi := range nm {
				linearFinish(y, x, w, mb+mi, row[:nr], acc[mi][:nr], body)
			}
		}
	}
}

// quarterRows sets row[r] to row p of quarter r, for [o0, o1) split into len(row)
// contiguous quarters of q rows; a quarter without a row p gets row p of the first (read
// from cache, its result unused). It returns how many quarters have a row p: the first
// ones.
func quarterRows(row []int, o0, o1, q, p int) int {
	nr := 0
	for r := range row {
		row[r] = o0 + p
		if o := o0 + r*q + p; o < o1 {
			row[r], nr = o, r+1
		}
	}
	return nr
}

// linearFinish writes the outputs rows[r] of row mi of y from their partial sums acc[r]
// over the first body elements (a multiple of 8): it fuses the products of the last in-body
// elements (linearTail) and combines the lanes (combine8).
func linearFinish(y, x []float32, w Matrix, mi int, rows []int, acc [][Lanes]float32, body int) {
	in, out := w.Cols, w.Rows
	xr := x[mi*in : (mi+1)*in]
	yr := y[mi*out : (mi+1)*out]
	for r, o := range rows {
		a := &acc[r]
		if body < in {
			linearTail(a, xr[body:], w, o*in+body)
		}
		yr[o] = combine8(a)
	}
}

// linearTail fuses the products of the last len(x) < 8 elements of a row into lanes 0.. of
// acc, as fmaAcc does; the weights start at element off of w.
func linearTail(acc *[Lanes]float32, x []float32, w Matrix, off int) {
	if w.DType == dtype.F32 {
		wf := w.F32s()
		for i, xv := range x {
			acc[i] = fma32(xv, wf[off+i], acc[i])
		}
		return
	}
	wb := w.Bits()
	for i, xv := range x {
		acc[i] = fma32(xv, dtype.ToF32(w.DType, wb[off+i]), acc[i])
	}
}

// linear4AVX2 runs the kernel of dtype t.
func linear4AVX2(t dtype.DType, acc *[linearRowBlock][Lanes]float32, x *float32, xstride, m int, w unsafe.Pointer, off *[linearRowBlock]int, n int) {
	switch t {
	case dtype.F32:
		linear4F32AVX2(acc, x, xstride, m, w, off, n)
	case dtype.BF16:
		linear4BF16AVX2(acc, x, xstride, m, w, off, n)
	default:
		linear4F16AVX2(acc, x, xstride, m, w, off, n)
	}
}
