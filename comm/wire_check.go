package comm

import (
	"math"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// WireError is how far a low-precision all-reduce's outputs are from the exact wire's
// result for the same inputs: the rank-order f32 sum of the inputs, rounded once to the
// dtype, which the exact one-shot and two-shot give bit for bit.
type WireError struct {
	// MaxAbs is the largest |out - exact| over the elements.
	MaxAbs float64 `json:"max_abs"`
	// MaxRel is the largest |out - exact|/|exact| over the elements with |exact| at least
	// RMS(exact): relative error of the typical element, not of sums that cancel to ~0.
	MaxRel float64 `json:"max_rel"`
	// RelRMS is RMS(out - exact)/RMS(exact).
	RelRMS float64 `json:"rel_rms"`
	// Differ counts elements whose bits differ from rank 0's on some rank (must be 0).
	Differ int `json:"differ"`
}

// CompareExact measures outs (every rank's all-reduce of count elements of ins) against
// the exact wire's result.
func CompareExact(ins, outs []*device.Buffer, count int) WireError {
	exact := make([]float64, count)
	ss := 0.0
	for i := range exact {
		var acc float32
		for _, in := range ins {
			acc += float32(elementF64(in, i))
		}
		if t := outs[0].DType(); t != dtype.F32 {
			acc = dtype.ToF32(t, dtype.FromF32(t, acc))
		}
		exact[i] = float64(acc)
		ss += exact[i] * exact[i]
	}
	rms := math.Sqrt(ss / float64(max(count, 1)))
	var e WireError
	errSS := 0.0
	for i, want := range exact {
		got := elementF64(outs[0], i)
		d := math.Abs(got - want)
		e.MaxAbs = max(e.MaxAbs, d)
		errSS += d * d
		if math.Abs(want) >= rms && want != 0 {
			e.MaxRel = max(e.MaxRel, d/math.Abs(want))
		}
		for _, out := range outs[1:] {
			if math.Float64bits(elementF64(out, i)) != math.Float64bits(got) {
				e.Differ++
				break
			}
		}
	}
	if rms > 0 {
		e.RelRMS = math.Sqrt(errSS/float64(count)) / rms
	}
	return e
}
