//go:build !amd64 || noasm

package quant

import "github.com/tpslice/tpslice/dtype"

// dotRows is Dot: without the amd64 assembly, the portable Go.
func dotRows(t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, rows, cols, o0, o1 int) {
	dotRowsGo(t, y, ystride, xq, m, w, rows, cols, o0, o1)
}
