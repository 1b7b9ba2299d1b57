//go:build amd64 && !noasm

package layers

import "github.com/tpslice/tpslice/vec"

// The AVX2 kernels of the reductions and softmax steps (reduce_amd64.s), bitwise the Go of
// reduce.go: n ≥ 8 elements from each pointer (shorter slices run the Go), y and out not
// overlapping the inputs.

//go:noescape
func dotAVX2(x, w *float32, n int) float32

//go:noescape
func dot4AVX2(out *[4]float32, x, w0, w1, w2, w3 *float32, n int)

//go:noescape
func sumAVX2(x *float32, n int) float32

//go:noescape
func axpyAVX2(y *float32, a float32, x *float32, n int)

//go:noescape
func axpy4AVX2(y *float32, a *[4]float32, x0, x1, x2, x3 *float32, n int)

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func expSubAVX2(x *float32, m float32, n int)

//go:noescape
func swigluAVX2(out, gate, up *float32, n int)

// The re-slicing in each function below is the length check of the Go version (a short w or
// x panics rather than letting the kernel read past it). Each runs the assembly where the CPU
// has it, for n ≥ Lanes.

// dot is dotGo's result: the package's dot product of x and w[:len(x)].
func dot(x, w []float32) float32 {
	w = w[:len(x)]
	if !vec.Accelerated() || len(x) < Lanes {
		return dotGo(x, w)
	}
	return dotAVX2(&x[0], &w[0], len(x))
}

// dot4 is dot4Go's result: out[r] = dot(x, w_r) for the four rows w0..w3, each at least
// len(x) long; one pass loads each element of x once for all four.
func dot4(out *[4]float32, x, w0, w1, w2, w3 []float32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	if !vec.Accelerated() || n < Lanes {
		dot4Go(out, x, w0, w1, w2, w3)
		return
	}
	dot4AVX2(out, &x[0], &w0[0], &w1[0], &w2[0], &w3[0], n)
}

// sum is sumGo's result: the package's sum of x.
func sum(x []float32) float32 {
	if !vec.Accelerated() || len(x) < Lanes {
		return sumGo(x)
	}
	return sumAVX2(&x[0], len(x))
}

// axpy is axpyGo: y[i] += float32(a * x[i]), len(x) ≥ len(y).
func axpy(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	if !vec.Accelerated() || len(y) < Lanes {
		axpyGo(y, a, x)
		return
	}
	axpyAVX2(&y[0], a, &x[0], len(y))
}

// axpy4 is axpy4Go: the four scaled rows added into y in row order, every x at least
// len(y) long.
func axpy4(y []float32, a *[4]float32, x0, x1, x2, x3 []float32) {
	n := len(y)
	x0, x1, x2, x3 = x0[:n], x1[:n], x2[:n], x3[:n]
	if !vec.Accelerated() || n < Lanes {
		axpy4Go(y, a, x0, x1, x2, x3)
		return
	}
	axpy4AVX2(&y[0], a, &x0[0], &x1[0], &x2[0], &x3[0], n)
}

// rowMax is rowMaxGo's result: the maximum of a softmax row, len(x) ≥ 1. The kernel's lanes
// agree with the scan on the value; when that is zero, the scan's is the first zero of x,
// of either sign.
func rowMax(x []float32) float32 {
	if !vec.Accelerated() || len(x) < Lanes {
		return rowMaxGo(x)
	}
	m := maxAVX2(&x[0], len(x))
	if m == 0 {
		for _, v := range x {
			if v == 0 {
				return v
			}
		}
	}
	return m
}

// expSub is expSubGo: x[i] = expf(x[i] - m).
func expSub(x []float32, m float32) {
	if !vec.Accelerated() || len(x) < Lanes {
		expSubGo(x, m)
		return
	}
	expSubAVX2(&x[0], m, len(x))
}

// swiglu is swigluGo: out[i] = silu(gate[i]) · up[i], gate and up at least len(out) long.
func swiglu(out, gate, up []float32) {
	gate, up = gate[:len(out)], up[:len(out)]
	if !vec.Accelerated() || len(out) < Lanes {
		swigluGo(out, gate, up)
		return
	}
	swigluAVX2(&out[0], &gate[0], &up[0], len(out))
}
