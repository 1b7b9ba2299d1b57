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
	dotGroupsAsm(isaGroups(isa)[t], t, y, ystride, xq, m, w, rows, cols, o0, o1)
}

// isaGroups are the grouped kernels of one instruction set.
func isaGroups(isa string) map[dtype.DType]groupKernel {
	if isa == "avx512" {
		return avx512Groups
	}
	return avx2Groups
}
