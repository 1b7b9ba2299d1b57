//go:build !amd64 || noasm

package layers

// linearRows is LinearRows after validation: without the amd64 assembly, the portable Go.
func linearRows(y, x []float32, w Matrix, m, o0, o1 int) { linearRowsGo(y, x, w, m, o0, o1) }
