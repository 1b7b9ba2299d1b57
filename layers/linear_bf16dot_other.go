//go:build !amd64 || noasm

package layers

// Without the amd64 assembly, LinearBF16DotRows and RoundBF16 run their Go references.
func linearBF16Dot(y []float32, xb []uint16, w Matrix, m, o0, o1 int) {
	linearBF16DotGo(y, xb, w, m, o0, o1)
}

func roundBF16Slice(dst []uint16, x []float32) { roundBF16SliceGo(dst, x) }
