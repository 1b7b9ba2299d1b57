package layers

import (
	"fmt"

	"github.com/tpslice/tpslice/quant"
)

// QuantizedInputBytes is the size of m rows of activations quantized for w's dot products
// (quant.ActsFor(w.DType)): what LinearQuantRows reads.
func QuantizedInputBytes(w Matrix, m int) int { return m * quant.ActsFor(w.DType).RowBytes(w.Cols) }

// LinearQuantRows computes the outputs [o0, o1) of a linear layer without bias whose
// weights are quantized (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q5_0, Q5_1 in package quant's device
// layout), for the M = len(y)/w.Rows rows of activations xq quantized for them
// (quant.QuantizeActs with quant.ActsFor(w.DType)): y[m·out + o] = Σ
// dequant(W[o])·dequant(x[m]), with quant.Dot's integer block sums and fixed order of f32
// operations (its doc comment holds the reference loops), so a GEMM row is bitwise the
// GEMV of that row on any split of the rows. Only columns [o0, o1) of y are written. It does
// not allocate.
//
// Activations are quantized (to 16-bit integers, quant.Acts says why not 8) rather than the
// weights widened to f32: a kernel that widens every weight to f32 pays a conversion, a
// multiply and an add per weight, which on this project's machines is the f16 GEMV's rate
// (6-11 G weights/s on one core, `-bench GEMV/14336x4096/f16`), 3.5-6 GB/s of Q4_0 bytes,
// while integer products (VPDPBUSD: 64 an instruction, on 16 interleaved rows at once)
// leave every type near the read bandwidth (`-bench 'Dot|ReadBandwidth' ./quant/ ./vec/`).
func LinearQuantRows(y []float32, xq []byte, w Matrix, o0, o1 int) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("layers: linear: weight %w", err)
	}
	if !w.DType.Quantized() {
		return fmt.Errorf("layers: linear: %v weights take f32 activations: use LinearRows", w.DType)
	}
	if len(y)%w.Rows != 0 {
		return fmt.Errorf("layers: linear: len(y)=%d is not a multiple of out=%d", len(y), w.Rows)
	}
	m := len(y) / w.Rows
	if need := QuantizedInputBytes(w, m); len(xq) < need {
		return fmt.Errorf("layers: linear: %d rows of %v activations of width %d need %d bytes, have %d",
			m, quant.ActsFor(w.DType), w.Cols, need, len(xq))
	}
	if o0 < 0 || o0 > o1 || o1 > w.Rows {
		return fmt.Errorf("layers: linear: output rows [%d, %d) not within [0, %d)", o0, o1, w.Rows)
	}
	if g := quant.RowAlign(w.DType); o0%g != 0 || (o1%g != 0 && o1 != w.Rows) {
		return fmt.Errorf("layers: linear: output rows [%d, %d) of %v weights: the layout groups %d rows, so a range begins at a multiple of %d and ends at one or at row %d", o0, o1, w.DType, g, g, w.Rows)
	}
	quant.Dot(w.DType, y, w.Rows, xq, m, w.Data, w.Rows, w.Cols, o0, o1)
	return nil
}
