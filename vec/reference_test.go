package vec

import "github.com/tpslice/tpslice/dtype"

// The plain reference loops, exactly as the doc comments of the exported functions state
// them. Every fast path is tested bit for bit against these.

func refAddF32(dst, src []float32) {
	for i := range dst {
		dst[i] += src[i]
	}
}

func refWiden(t dtype.DType, dst []float32, src []uint16) {
	for i := range dst {
		dst[i] = dtype.ToF32(t, src[i])
	}
}

func refNarrow(t dtype.DType, dst []uint16, src []float32) {
	for i := range dst {
		dst[i] = dtype.FromF32(t, src[i])
	}
}

func refSumF32(dst []float32, srcs [][]float32) {
	for i := range dst {
		acc := srcs[0][i]
		for k := 1; k < len(srcs); k++ {
			acc += srcs[k][i]
		}
		dst[i] = acc
	}
}

func refSum16(t dtype.DType, dst []uint16, srcs [][]uint16) {
	for i := range dst {
		acc := dtype.ToF32(t, srcs[0][i])
		for k := 1; k < len(srcs); k++ {
			acc += dtype.ToF32(t, srcs[k][i])
		}
		dst[i] = dtype.FromF32(t, acc)
	}
}

func refSum16ToF32(t dtype.DType, dst []float32, srcs [][]uint16) {
	for i := range dst {
		acc := dtype.ToF32(t, srcs[0][i])
		for k := 1; k < len(srcs); k++ {
			acc += dtype.ToF32(t, srcs[k][i])
		}
		dst[i] = acc
	}
}
