package comm

import (
	"math"
	"math/rand/v2"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// CountWrong checks an all-reduce the way nccl-tests' --check does: it sums the ranks'
// inputs in float64 and counts the output elements, over all ranks, that are farther from
// that sum than the dtype allows (f32 accumulation error, plus one rounding for 16-bit
// types) or whose bits differ from rank 0's (all ranks must get identical results).
func CountWrong(ins, outs []*device.Buffer, count int) int {
	t := outs[0].DType()
	wrong := 0
	for i := range count {
		exact, abs := 0.0, 0.0
		for _, in := range ins {
			v := elementF64(in, i)
			exact += v
			abs += math.Abs(v)
		}
		tol := Tolerance(t, exact, abs, len(ins))
		for r, out := range outs {
			got := elementF64(out, i)
			if math.Abs(got-exact) > tol || (r > 0 && math.Float64bits(got) != math.Float64bits(elementF64(outs[0], i))) {
				wrong++
			}
		}
	}
	return wrong
}

// CountWrongReduceScatter checks a reduce-scatter as CountWrong checks an all-reduce: rank
// r's count outputs against the float64 sum of slice r of every rank's n·count inputs,
// within Tolerance. Ranks hold different slices, so no bits are compared between them.
func CountWrongReduceScatter(ins, outs []*device.Buffer, count int) int {
	t := outs[0].DType()
	wrong := 0
	for r, out := range outs {
		for i := range count {
			exact, abs := 0.0, 0.0
			for _, in := range ins {
				v := elementF64(in, r*count+i)
				exact += v
				abs += math.Abs(v)
			}
			if math.Abs(elementF64(out, i)-exact) > Tolerance(t, exact, abs, len(ins)) {
				wrong++
			}
		}
	}
	return wrong
}

// CountWrongAllGather counts the elements of every rank's n·count outputs that are not,
// bit for bit, the input they were gathered from: out_r[p·count + i] = in_p[i].
func CountWrongAllGather(ins, outs []*device.Buffer, count int) int {
	wrong := 0
	for _, out := range outs {
		for p, in := range ins {
			for i := range count {
				if math.Float64bits(elementF64(out, p*count+i)) != math.Float64bits(elementF64(in, i)) {
					wrong++
				}
			}
		}
	}
	return wrong
}

// Tolerance is how far an all-reduce result may be from the exact sum of n terms whose
// magnitudes add up to absSum: n f32 roundings of partial sums, plus one final rounding
// to t for 16-bit types.
func Tolerance(t dtype.DType, exact, absSum float64, n int) float64 {
	tol := float64(n)*absSum*0x1p-23 + 0x1p-126
	switch t {
	case dtype.BF16:
		tol += math.Abs(exact) * 0x1p-8
	case dtype.F16:
		tol += math.Abs(exact)*0x1p-11 + 0x1p-24
	}
	return tol
}

// elementF64 reads element i of a buffer as float64.
func elementF64(b *device.Buffer, i int) float64 {
	if b.DType() == dtype.F32 {
		return float64(b.Float32s()[i])
	}
	return float64(dtype.ToF32(b.DType(), b.Uint16s()[i]))
}

// Fill writes count standard-normal values, drawn from seed, into each rank's buffer
// (rounded to the buffer's dtype), as benchmark and test inputs.
func Fill(bufs []*device.Buffer, count int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(count)))
	for _, b := range bufs {
		for i := range count {
			x := float32(rng.NormFloat64())
			if b.DType() == dtype.F32 {
				b.Float32s()[i] = x
			} else {
				b.Uint16s()[i] = dtype.FromF32(b.DType(), x)
			}
		}
	}
}
