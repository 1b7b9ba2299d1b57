package layers

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// The blocking of linearRows. None of it changes the result: the order of every output's
// reduction is fixed by the element index alone (see fmaAcc).
const (
	// linearRowBlock output rows share each pass over a tile of x.
	linearRowBlock = 4
	// linearTile elements of a weight row are widened (16-bit dtypes) and reduced per step;
	// a multiple of Lanes, so that tiles keep the lanes of the whole row.
	linearTile = 512
	// linearMChunk rows of x share one widening of a weight tile; larger batches run in
	// chunks of this many rows.
	linearMChunk = 64
)

// GEMMTileRows output rows make one tile of the GEMM that LinearRows runs for several rows
// of x on AVX-512 CPUs: a range [o0, o1) whose length is not a multiple of it pads its last
// tile and multiplies the padding for nothing, so a caller splitting a matrix's outputs
// among workers for many rows of x should cut at multiples of it.
const GEMMTileRows = 12

// Linear computes every output of a linear layer without bias, y = x·Wᵀ, for the M rows of
// x (M = len(x)/w.Cols; M = 1 is a GEMV, small M a GEMM), with W an [out, in] Matrix in
// f32, bf16 or f16 and f32 activations and accumulation. It is LinearRows over [0, w.Rows).
func Linear(y, x []float32, w Matrix) error {
	return LinearRows(y, x, w, 0, w.Rows)
}

// LinearRows computes the outputs [o0, o1) of a linear layer without bias, for the M rows
// of x (x is [M, in], y is [M, out], both row-major; M = len(x)/w.Cols), so that callers
// can give each SM a block of output rows. Each output is reduced in a fixed order (8
// partial sums over i mod 8, each product fused into its sum by a float32 fused
// multiply-add, fma32, then combined in combine8's tree), the same for M = 1 and any M, for
// any row block and on any worker: a GEMM row is bitwise equal to the GEMV of that row. The
// reference loop, with widen the exact dtype.ToF32 of a 16-bit weight:
//
//	for m := range M {
//		for o := o0; o < o1; o++ {
//			var acc [8]float32
//			for i := range in { acc[i%8] = fma32(x[m*in+i], widen(W[o*in+i]), acc[i%8]) }
//			y[m*out+o] = ((acc[0]+acc[4]) + (acc[2]+acc[6])) + ((acc[1]+acc[5]) + (acc[3]+acc[7]))
//		}
//	}
//
// The fused product rounds once where a product and a sum round twice, so it is at least
// as accurate, and it is the instruction the CPU's peak is counted in.
//
// Only columns [o0, o1) of y are written; y must not overlap x. It does not allocate, and it
// reads every weight once per call for up to 64 rows of x (128 in the AVX-512 GEMM): each
// pass over x serves 4 output rows, and each tile of 4 weight rows serves up to 64 rows of x.
//
// On amd64 with AVX2, F16C and FMA (vec.Accelerated) it runs assembly kernels
// (linear_amd64.s): one YMM register per (row of x, output row) holds the 8 partial sums,
// and every element is one VFMADD231PS of x and the widened weights (VCVTPH2PS for f16, a
// 16-bit shift for bf16) onto them in element order, so the results are bitwise the
// reference loop's. From 8 rows of x (4 for bf16 weights) on CPUs with AVX-512 it runs a
// register-blocked GEMM instead (gemm_avx512_amd64.s): each 256-element tile of 12 weight
// rows is widened to f32 once and serves up to 128 rows of x, 4 rows by 12 outputs a
// micro-kernel, a ZMM register holding the 8 partial sums of 2 outputs; the same
// VFMADD231PS per element in the same order, so its rows are bitwise the GEMV's. Elsewhere,
// or built with -tags noasm, it runs the portable Go of linearRowsGo, the same loop tiled
// (fmaAcc). The one thing the reference leaves open is which NaN payload survives where two
// NaNs meet: the result is NaN either way; every assembly kernel uses the same instruction
// with the same operands (partial sum, x, weight), so its GEMM rows equal its GEMVs even
// in NaN payloads.
func LinearRows(y, x []float32, w Matrix, o0, o1 int) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("layers: linear: weight %w", err)
	}
	if w.DType.Quantized() {
		return fmt.Errorf("layers: linear: %v weights take quantized activations: use LinearQuantRows", w.DType)
	}
	in, out := w.Cols, w.Rows
	if len(x)%in != 0 {
		return fmt.Errorf("layers: linear: len(x)=%d is not a multiple of in=%d", len(x), in)
	}
	m := len(x) / in
	if len(y) != m*out {
		return fmt.Errorf("layers: linear: len(y)=%d, want M·out = %d·%d = %d", len(y), m, out, m*out)
	}
	if o0 < 0 || o0 > o1 || o1 > out {
		return fmt.Errorf("layers: linear: output rows [%d, %d) not within [0, %d)", o0, o1, out)
	}
	linearRows(y, x, w, m, o0, o1)
	return nil
}

// linearRowsGo is LinearRows after validation in portable Go (fmaAcc): 16-bit weights are
// widened a tile at a time (vec.Widen) into a buffer on the stack, and each tile of weights
// serves up to 4 output rows and 64 rows of x per pass. It is the whole kernel without the assembly
// (noasm, other architectures, CPUs without AVX2 and F16C) and the baseline the benchmarks
// compare the assembly against.
func linearRowsGo(y, x []float32, w Matrix, m, o0, o1 int) {
	in, out := w.Cols, w.Rows
	wf, wb := w.F32s(), w.Bits()
	var wt [linearRowBlock][linearTile]float32
	var acc [linearMChunk][linearRowBlock][Lanes]float32
	var rows [linearRowBlock][]float32
	for ob := o0; ob < o1; ob += linearRowBlock {
		nr := min(linearRowBlock, o1-ob)
		for mb := 0; mb < m; mb += linearMChunk {
			nm := min(linearMChunk, m-mb)
			clear(acc[:nm])
			for k := 0; k < in; k += linearTile {
				kl := min(linearTile, in-k)
				for r := range nr {
					off := (ob+r)*in + k
					if w.DType == dtype.F32 {
						rows[r] = wf[off : off+kl]
					} else {
						rows[r] = wt[r][:kl]
						vec.Widen(w.DType, rows[r], wb[off:off+kl])
					}
				}
				for mi := range nm {
					xr := x[(mb+mi)*in+k : (mb+mi)*in+k+kl]
					a := &acc[mi]
					for r := range nr {
						fmaAcc(&a[r], xr, rows[r])
					}
				}
			}
			for mi := range nm {
				yr := y[(mb+mi)*out+ob : (mb+mi)*out+ob+nr]
				for r := range yr {
					yr[r] = combine8(&acc[mi][r])
				}
			}
		}
	}
}
