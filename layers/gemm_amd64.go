//go:build amd64 && !noasm

package layers

import (
	"unsafe"

	"github.com/tpslice/tpslice/dtype"
)

// The blocking of linearRowsAVX512; none of it changes the result (see
// gemm_avx512_amd64.s).
const (
	// gemmCols output rows make a tile: 6 pairs, one ZMM register each.
	gemmCols = 12
	// gemmPackRows weight rows are widened by one call of a packing kernel: a quarter of
	// the tile's 3.
	gemmPackRows = 4
	// gemmPacks packing calls make a tile.
	gemmPacks = gemmCols / gemmPackRows
	// gemmTileK elements of the tile's weight rows are packed at a time: 12 KiB of f32,
	// which stay in L1 beside 4 rows of x while every row of x passes over them. The
	// packing kernels prefetch this many elements ahead (const_gemmTileK).
	gemmTileK = 256
	// gemmMChunk rows of x share one packing of a tile; larger M run in chunks of this many
	// rows (the partial sums of a chunk, 48 KiB, live on the stack).
	gemmMChunk = 128
)

// gemmMinRows is the least M for which LinearRows runs the AVX-512 GEMM rather than the
// AVX2 kernels: below it the weights' bytes set the time, and widening them into a tile
// costs more than the tile saves. Measured by BenchmarkGEMMPaths (cpuGFLOP/s, medians of 5
// rounds at medium's shapes), the GEMM against the AVX2 kernels: bf16 0.86-0.93× at M = 3
// and 1.15-1.20× at M = 4; f16 0.95-0.97× at M = 4 and 1.28-1.33× at M = 8; f32, which
// the AVX2 kernels need not widen, 0.89-0.97× at M = 4 and 1.03-1.14× at M = 8.
func gemmMinRows(t dtype.DType) int {
	if t == dtype.BF16 {
		return 4
	}
	return 8
}

// The packing kernels (gemm_avx512_amd64.s), one per weight dtype: n elements (n > 0, a
// multiple of 8) of the 4 weight rows (a quarter of a tile) that start at elements
// off[0..3] of w, the matrix's data, widened to f32 into panel in the micro-kernel's
// order: for each step of 8 elements, rows 0 and 1, then 2 and 3, each pair's 8 elements
// of its first row then of its second.

//go:noescape
func gemmPackF32AVX512(panel *float32, w unsafe.Pointer, off *[gemmPackRows]int, n int)

//go:noescape
func gemmPackF16AVX512(panel *float32, w unsafe.Pointer, off *[gemmPackRows]int, n int)

//go:noescape
func gemmPackBF16AVX512(panel *float32, w unsafe.Pointer, off *[gemmPackRows]int, n int)

// gemmTileAVX512 (gemm_avx512_amd64.s) continues the partial sums acc[mi] (m consecutive
// [12][8] blocks) of rows mi = 0..m-1 of x (row mi at byte offset mi·xstride from x)
// against a packed tile of 12 weight rows over n elements (three packed quarters of n·4
// floats, one after the other): n > 0 and a multiple of 8, m ≥ 0.
//
//go:noescape
func gemmTileAVX512(acc *[gemmCols][Lanes]float32, x *float32, xstride, m int, panel *float32, n int)

// gemmFinishAVX512 (gemm_avx512_amd64.s) writes the 12 outputs of each of m ≥ 0 rows of x
// (row mi's at byte offset mi·ystride from y) from their partial sums acc[mi] (m
// consecutive [12][8] blocks), each output's lanes combined in combine8's tree: the
// finish of a full tile of a row without a tail (in%8 = 0), in assembly because Go's
// linearFinish took 7% of the GEMM.
//
//go:noescape
func gemmFinishAVX512(y *float32, ystride int, acc *[gemmCols][Lanes]float32, m int)

// gemmPackAVX512 runs the packing kernel of dtype t.
func gemmPackAVX512(t dtype.DType, panel *float32, w unsafe.Pointer, off *[gemmPackRows]int, n int) {
	switch t {
	case dtype.F32:
		gemmPackF32AVX512(panel, w, off, n)
	case dtype.BF16:
		gemmPackBF16AVX512(panel, w, off, n)
	default:
		gemmPackF16AVX512(panel, w, off, n)
	}
}

// linearRowsAVX512 is LinearRows after validation as a register-blocked GEMM, run from
// gemmMinRows rows of x on CPUs with AVX-512 (any M ≥ 1 gives the reference's bits). For
// each tile of 12 output rows of [o0, o1) (the last one padded by repeating its last row,
// whose results are dropped) and each chunk of up to 128 rows of x, it widens 256 elements
// of the tile's weight rows to f32 once (the packing kernel, once per quarter) and runs every
// row of x over them (the micro-kernel: 4 rows of x by 12 outputs a block, one VFMADD231PS
// per element), then Go fuses the last in%8 products in (fma32) and combines the lanes, as
// linearRowsAVX2 does. The order of every output's reduction is the reference loop's, so a
// row's outputs are bitwise its GEMV's, which the AVX2 kernels compute.
func linearRowsAVX512(y, x []float32, w Matrix, m, o0, o1 int) {
	in := w.Cols
	body := in &^ (Lanes - 1)
	base := unsafe.Pointer(unsafe.SliceData(w.Data))
	var panel [gemmTileK * gemmCols]float32
	var acc [gemmMChunk][gemmCols][Lanes]float32
	var off [gemmPacks][gemmPackRows]int
	var row [gemmCols]int
	for ob := o0; ob < o1; ob += gemmCols {
		nr := min(gemmCols, o1-ob)
		for r := range row {
			row[r] = ob + min(r, nr-1)
		}
		for mb := 0; mb < m; mb += gemmMChunk {
			nm := min(gemmMChunk, m-mb)
			clear(acc[:nm])
			for k := 0; k < body; k += gemmTileK {
				kl := min(gemmTileK, body-k)
				for r, o := range row {
					off[r/gemmPackRows][r%gemmPackRows] = o*in + k
				}
				for q := range off {
					gemmPackAVX512(w.DType, &panel[q*kl*gemmPackRows], base, &off[q], kl)
				}
				_ = x[(mb+nm-1)*in+k+kl-1] // the last element the kernel reads
				gemmTileAVX512(&acc[0], &x[mb*in+k], 4*in, nm, &panel[0], kl)
			}
			if body == in && nr == gemmCols {
				out := w.Rows
				_ = y[(mb+nm-1)*out+ob+gemmCols-1] // the last element the kernel writes
				gemmFinishAVX512(&y[mb*out+ob], 4*out, &acc[0], nm)
				continue
			}
			for mi := range nm {
				linearFinish(y, x, w, mb+mi, row[:nr], acc[mi][:nr], body)
			}
		}
	}
}
