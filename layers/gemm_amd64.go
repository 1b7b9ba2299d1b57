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
	gemmCols = GEMMTileRows
	// gemmTileK elements of the tile's weight rows are packed at a time: 12 KiB of f32,
	// which stay in L1 beside 4 rows of x while every row of x passes over them. The
	// packing prefetches this many elements ahead (const_gemmTileK).
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

// gemmNext is the packing a fused kernel does beside its multiplication: n elements (a
// multiple of 8, maybe 0) of the 12 weight rows that start at rows[r] (the matrix's data,
// which the caller keeps alive), widened to f32 into panel in the packed order (for each
// step of 8 elements, 6 pairs: the step's elements of row 2p, then of row 2p+1). The
// assembly reads it by the offsets go_asm.h gives.
type gemmNext struct {
	rows  [gemmCols]unsafe.Pointer
	panel *float32
	n     int
}

// The fused kernels (gemm_avx512_amd64.s), one per weight dtype: they continue the partial
// sums acc[mi] (m ≥ 0 consecutive [12][8] blocks) of rows mi = 0..m-1 of x (row mi at byte
// offset mi·xstride from x) against a packed tile of 12 weight rows over n elements (n > 0,
// a multiple of 8), and meanwhile pack next (with m = 0 they only pack).

//go:noescape
func gemmTilePackF32AVX512(acc *[gemmCols][Lanes]float32, x *float32, xstride, m int, panel *float32, n int, next *gemmNext)

//go:noescape
func gemmTilePackF16AVX512(acc *[gemmCols][Lanes]float32, x *float32, xstride, m int, panel *float32, n int, next *gemmNext)

//go:noescape
func gemmTilePackBF16AVX512(acc *[gemmCols][Lanes]float32, x *float32, xstride, m int, panel *float32, n int, next *gemmNext)

// gemmFinishAVX512 (gemm_avx512_amd64.s) writes the 12 outputs of each of m ≥ 0 rows of x
// (row mi's at byte offset mi·ystride from y) from their partial sums acc[mi] (m
// consecutive [12][8] blocks), each output's lanes combined in combine8's tree: the
// finish of a full tile of a row without a tail (in%8 = 0), in assembly because Go's
// linearFinish took 7% of the GEMM.
//
//go:noescape
func gemmFinishAVX512(y *float32, ystride int, acc *[gemmCols][Lanes]float32, m int)

// gemmTilePackAVX512 runs the fused kernel of dtype t.
func gemmTilePackAVX512(t dtype.DType, acc *[gemmCols][Lanes]float32, x *float32, xstride, m int, panel *float32, n int, next *gemmNext) {
	switch t {
	case dtype.F32:
		gemmTilePackF32AVX512(acc, x, xstride, m, panel, n, next)
	case dtype.BF16:
		gemmTilePackBF16AVX512(acc, x, xstride, m, panel, n, next)
	default:
		gemmTilePackF16AVX512(acc, x, xstride, m, panel, n, next)
	}
}

// gemmStep is one call of a GEMM's fused kernel: k-tile [k, k+kl) of the tile of output
// rows [ob, ob+12) against rows [mb, mb+nm) of x. A GEMM runs its steps tile by tile, chunk
// by chunk of x, k-tile by k-tile, each step packing the next one's weights.
type gemmStep struct {
	ob, mb, k        int
	m, o1, body, end int // the GEMM's rows of x, end of its outputs, and body (in&^7)
}

// advance moves s to the next step and reports whether there is one.
func (s *gemmStep) advance() bool {
	if s.k += gemmTileK; s.k < s.body {
		return true
	}
	s.k = 0
	if s.mb += gemmMChunk; s.mb < s.m {
		return true
	}
	s.mb = 0
	s.ob += gemmCols
	return s.ob < s.o1
}

func (s *gemmStep) kl() int { return min(gemmTileK, s.body-s.k) }
func (s *gemmStep) nm() int { return min(gemmMChunk, s.m-s.mb) }

// rows sets row to the tile's output rows: [ob, o1) padded by repeating its last row,
// whose results are dropped; it returns how many are real.
func (s *gemmStep) rows(row *[gemmCols]int) int {
	nr := min(gemmCols, s.o1-s.ob)
	for r := range row {
		row[r] = s.ob + min(r, nr-1)
	}
	return nr
}

// linearRowsAVX512 is LinearRows after validation as a register-blocked GEMM, run from
// gemmMinRows rows of x on CPUs with AVX-512 (any M ≥ 1 gives the reference's bits). For
// each tile of 12 output rows of [o0, o1) (the last one padded by repeating its last row,
// whose results are dropped) and each chunk of up to 128 rows of x, it runs every row of x
// over 256 elements of the tile's weight rows at a time, widened to f32 once (the fused
// kernel: 4 rows of x by 12 outputs a block, one VFMADD231PS per element, while it widens
// the next step's weights into the other panel), then fuses the last in%8 products in
// (fma32) and combines the lanes, as linearRowsAVX2 does. The order of every output's
// reduction is the reference loop's, so a row's outputs are bitwise its GEMV's, which the
// AVX2 kernels compute.
func linearRowsAVX512(y, x []float32, w Matrix, m, o0, o1 int) {
	if m == 0 || o0 == o1 {
		return // no rows of x or no outputs: the kernel would read x[0] and row o0 regardless
	}
	in := w.Cols
	body := in &^ (Lanes - 1)
	if body == 0 { // no k-tile to run: only the tail, which linearRowsAVX2 finishes alike
		linearRowsAVX2(y, x, w, m, o0, o1)
		return
	}
	base := unsafe.Pointer(unsafe.SliceData(w.Data))
	es := uintptr(w.DType.Size())
	var buf gemmBuffers
	panels, acc := buf.aligned()
	var next gemmNext
	var row [gemmCols]int
	pack := func(s *gemmStep, panel *float32) { // next = s's weights, into panel
		s.rows(&row)
		for r, o := range row {
			next.rows[r] = unsafe.Add(base, uintptr(o*in+s.k)*es)
		}
		next.panel, next.n = panel, s.kl()
	}
	cur := gemmStep{ob: o0, m: m, o1: o1, body: body}
	pack(&cur, &panels[0][0])
	gemmTilePackAVX512(w.DType, &acc[0], &x[0], 0, 0, &panels[0][0], Lanes, &next)
	for p := 0; ; p ^= 1 {
		s, nm, kl := cur, cur.nm(), cur.kl()
		more := cur.advance()
		next.n = 0
		if more {
			pack(&cur, &panels[p^1][0])
		}
		if s.k == 0 {
			clear(acc[:nm])
		}
		_ = x[(s.mb+nm-1)*in+s.k+kl-1] // the last element the kernel reads
		gemmTilePackAVX512(w.DType, &acc[0], &x[s.mb*in+s.k], 4*in, nm, &panels[p][0], kl, &next)
		if s.k+kl == body {
			gemmFinishRows(y, x, w, &s, acc[:nm], &row)
		}
		if !more {
			return
		}
	}
}

// gemmBuffers holds a GEMM's two panels and its partial sums with room to start both on a
// cache line: the kernels' 64-byte loads and stores of them would otherwise each touch two
// lines (a goroutine's stack aligns them to 8 bytes only).
type gemmBuffers struct {
	panels [2*gemmTileK*gemmCols + gemmLine]float32
	acc    [gemmMChunk*gemmCols*Lanes + gemmLine]float32
}

// gemmLine is a cache line in float32s.
const gemmLine = 16

// aligned returns the panels and partial sums, each at its first cache line.
func (b *gemmBuffers) aligned() (*[2][gemmTileK * gemmCols]float32, *[gemmMChunk][gemmCols][Lanes]float32) {
	at := func(p *float32) unsafe.Pointer {
		skip := (gemmLine*4 - uintptr(unsafe.Pointer(p))%(gemmLine*4)) % (gemmLine * 4)
		return unsafe.Add(unsafe.Pointer(p), skip)
	}
	return (*[2][gemmTileK * gemmCols]float32)(at(&b.panels[0])), (*[gemmMChunk][gemmCols][Lanes]float32)(at(&b.acc[0]))
}

// gemmFinishRows writes step s's outputs from their partial sums acc (one block a row of
// x) once its last k-tile ran: the assembly for a full tile without a tail, linearFinish
// otherwise. row is scratch.
func gemmFinishRows(y, x []float32, w Matrix, s *gemmStep, acc [][gemmCols][Lanes]float32, row *[gemmCols]int) {
	nr := s.rows(row)
	if s.body == w.Cols && nr == gemmCols {
		out := w.Rows
		_ = y[(s.mb+len(acc)-1)*out+s.ob+gemmCols-1] // the last element the kernel writes
		gemmFinishAVX512(&y[s.mb*out+s.ob], 4*out, &acc[0], len(acc))
		return
	}
	for mi := range acc {
		linearFinish(y, x, w, s.mb+mi, row[:nr], acc[mi][:nr], s.body)
	}
}
