//go:build !amd64 || noasm

package layers

// Without the amd64 assembly, the reductions are the portable Go of reduce.go.

// dot is dotGo.
func dot(x, w []float32) float32 { return dotGo(x, w) }

// dot4 is dot4Go.
func dot4(out *[4]float32, x, w0, w1, w2, w3 []float32) { dot4Go(out, x, w0, w1, w2, w3) }

// sum is sumGo.
func sum(x []float32) float32 { return sumGo(x) }

// axpy is axpyGo.
func axpy(y []float32, a float32, x []float32) { axpyGo(y, a, x) }

// axpy4 is axpy4Go.
func axpy4(y []float32, a *[4]float32, x0, x1, x2, x3 []float32) {
	axpy4Go(y, a, x0, x1, x2, x3)
}

// rowMax is rowMaxGo.
func rowMax(x []float32) float32 { return rowMaxGo(x) }

// expSub is expSubGo.
func expSub(x []float32, m float32) { expSubGo(x, m) }

// swiglu is swigluGo.
func swiglu(out, gate, up []float32) { swigluGo(out, gate, up) }
