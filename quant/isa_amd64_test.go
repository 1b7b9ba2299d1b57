//go:build amd64 && !noasm

package quant

import (
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// asmISAs names the instruction sets whose kernels this CPU runs.
func asmISAs() []string {
	var out []string
	if vec.AcceleratedAVX512() {
		out = append(out, "avx512")
	}
	if vec.Accelerated() {
		out = append(out, "avx2")
	}
	return out
}

// dotRowsISA is Dot with the kernels of one instruction set.
func dotRowsISA(isa string, t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, rows, cols, o0, o1 int) {
	g := avx2Groups[t]
	if isa == "avx512" {
		g = avx512Groups[t]
	}
	dotGroupsAsm(g, t, y, ystride, xq, m, w, rows, cols, o0, o1)
}
