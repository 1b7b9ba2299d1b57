package layers

import (
	"fmt"
	"math"

	"github.com/tpslice/tpslice/vec"
)

// RMSNorm normalizes every row of x (rows of n = len(w) elements, x is [rows, n]) by its
// root mean square and scales it by w, accumulating in f32 in the package's fixed order:
//
//	for each row x, out of n elements {
//		var acc [8]float32
//		for i := range n { acc[i%8] += float32(x[i] * x[i]) }
//		ss := ((acc[0]+acc[4]) + (acc[2]+acc[6])) + ((acc[1]+acc[5]) + (acc[3]+acc[7]))
//		r := float32(1 / math.Sqrt(float64(ss/float32(n) + eps)))
//		for i := range n { out[i] = float32(x[i] * r) * w[i] }
//	}
//
// The reciprocal square root is taken in float64 and rounded once to f32, so it is the
// same on every machine. out may be x (in place); otherwise they must not overlap.
func RMSNorm(out, x, w []float32, eps float32) error {
	if err := checkNorm("rmsnorm", out, x, w, eps); err != nil {
		return err
	}
	n := len(w)
	for r := 0; r < len(x); r += n {
		normRow(out[r:r+n], x[r:r+n], w, eps)
	}
	return nil
}

// RMSNormResidual adds x into the residual stream res and normalizes the result, row by
// row (rows of n = len(w) elements): the unfused residual add + RMSNorm that the fused
// all-reduce replaces, with the same order as RMSNorm:
//
//	for each row { for i := range n { res[i] += x[i] }; out = RMSNorm(res) · w }
//
// out may be x or res; otherwise the three must not overlap.
func RMSNormResidual(out, res, x, w []float32, eps float32) error {
	if err := checkNorm("rmsnorm residual", out, x, w, eps); err != nil {
		return err
	}
	if len(res) != len(x) {
		return fmt.Errorf("layers: rmsnorm residual: len(res)=%d, len(x)=%d: want equal", len(res), len(x))
	}
	n := len(w)
	for r := 0; r < len(x); r += n {
		vec.AddF32(res[r:r+n], x[r:r+n])
		normRow(out[r:r+n], res[r:r+n], w, eps)
	}
	return nil
}

// checkNorm validates the shapes and eps of a norm.
func checkNorm(op string, out, x, w []float32, eps float32) error {
	if len(w) == 0 {
		return fmt.Errorf("layers: %s: empty weight", op)
	}
	if len(x)%len(w) != 0 {
		return fmt.Errorf("layers: %s: len(x)=%d is not a multiple of the hidden size len(w)=%d", op, len(x), len(w))
	}
	if len(out) != len(x) {
		return fmt.Errorf("layers: %s: len(out)=%d, len(x)=%d: want equal", op, len(out), len(x))
	}
	if !(eps >= 0) || math.IsInf(float64(eps), 1) {
		return fmt.Errorf("layers: %s: eps=%v must be finite and non-negative", op, eps)
	}
	return nil
}

// normRow is one row of RMSNorm; all three slices are len(w) long. vec holds the loop,
// so that the fused collectives, which sit below layers, normalize with the same bits.
func normRow(out, x, w []float32, eps float32) { vec.RMSNorm(out, x, w, eps) }
