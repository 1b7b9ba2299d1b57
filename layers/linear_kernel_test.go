package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// These tests check every implementation of LinearRows (the exported function, which runs
// the assembly where vec.Accelerated, each instruction set's kernels forced for any M where
// the CPU has them, and the portable linearRowsGo) bit for bit against refLinear, over
// ragged sizes, unaligned slice starts, guard values around y and every kind of output row
// range. Under -tags noasm they are the portable Go.

// linearKernel is one implementation of LinearRows after validation.
type linearKernel struct {
	name string
	fn   func(y, x []float32, w Matrix, m, o0, o1 int)
}

// linearKernels are the implementations every differential test runs.
func linearKernels() []linearKernel {
	name := "exported"
	if vec.Accelerated() {
		name = "asm"
	}
	return append([]linearKernel{
		{name, func(y, x []float32, w Matrix, _, o0, o1 int) {
			if err := LinearRows(y, x, w, o0, o1); err != nil {
				panic(err)
			}
		}},
		{"go", linearRowsGo},
	}, isaLinearKernels()...)
}

// linearSentinel is the f32 pattern around and between the outputs a call may write: a
// signalling NaN that no kernel produces.
const linearSentinel = 0x7fa5a5a5

// linearGuard is how many elements before and after y must stay untouched.
const linearGuard = 16

// linearCase is one differential test: the dtype and sizes, element offsets of x, w's data
// and y from their allocations, whether the values include infinities, NaNs, subnormals
// and overflowing magnitudes, and the output row ranges [o0, o1) to compute, one call each.
type linearCase struct {
	dt               dtype.DType
	m, in, out       int
	xoff, woff, yoff int
	special          bool
	ranges           [][2]int
}

func (c linearCase) String() string {
	s := fmt.Sprintf("%v/m%d_in%d_out%d/off%d.%d.%d", c.dt, c.m, c.in, c.out, c.xoff, c.woff, c.yoff)
	if c.special {
		s += "/special"
	}
	return s
}

// linearSpecials are the values the special cases mix in.
var linearSpecials = []float32{
	float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
	math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc12345), math.Float32frombits(0x7f800001),
	math.Float32frombits(1), math.Float32frombits(0x807fffff), math.Float32frombits(0x00800000),
	math.MaxFloat32, -math.MaxFloat32, 3e38, 1e-38, 65504, 6e-8,
}

// linearValues returns n values for case c: uniform in [−scale, scale), or with one value in
// eight drawn from linearSpecials.
func linearValues(r *rand.Rand, n int, scale float32, special bool) []float32 {
	v := randF32(r, n, scale)
	if special {
		for i := range v {
			if r.IntN(8) == 0 {
				v[i] = linearSpecials[r.IntN(len(linearSpecials))]
			}
		}
	}
	return v
}

// checkLinearCase runs every row range of c on every implementation and requires the
// reference's bits in columns [o0, o1) of every row of y and the sentinel everywhere else in
// y's allocation.
func checkLinearCase(t *testing.T, r *rand.Rand, c linearCase) {
	t.Helper()
	xv := linearValues(r, c.m*c.in, 2, c.special)
	wv := linearValues(r, c.out*c.in, 1, c.special)
	x := make([]float32, c.xoff+len(xv))[c.xoff:]
	copy(x, xv)
	var w Matrix
	if c.dt == dtype.F32 {
		data := make([]float32, c.woff+len(wv))[c.woff:]
		copy(data, wv)
		w = F32Matrix(c.out, c.in, data)
	} else {
		data := make([]uint16, c.woff+len(wv))[c.woff:]
		for i, f := range wv {
			data[i] = dtype.FromF32(c.dt, f)
		}
		w = Matrix16(c.dt, c.out, c.in, data)
	}
	ref := make([]float32, c.m*c.out)
	refLinear(ref, x, w, 0, c.out)
	want := make([]float32, len(ref))
	buf := make([]float32, linearGuard+c.yoff+c.m*c.out+linearGuard)
	lo, hi := linearGuard+c.yoff, linearGuard+c.yoff+c.m*c.out
	y := buf[lo:hi:hi]
	for _, rg := range c.ranges {
		o0, o1 := rg[0], rg[1]
		for i := range want {
			want[i] = math.Float32frombits(linearSentinel)
			if o := i % c.out; o >= o0 && o < o1 {
				want[i] = ref[i]
			}
		}
		for _, k := range linearKernels() {
			for i := range buf {
				buf[i] = math.Float32frombits(linearSentinel)
			}
			k.fn(y, x, w, c.m, o0, o1)
			what := fmt.Sprintf("%s %v rows [%d, %d)", k.name, c, o0, o1)
			requireLinearBits(t, want, y, what)
			for i, f := range buf {
				if (i < lo || i >= hi) && math.Float32bits(f) != linearSentinel {
					require.Failf(t, "guard overwritten", "%s: element %d of y's allocation (y is [%d, %d)) = %#08x",
						what, i, lo, hi, math.Float32bits(f))
				}
			}
		}
	}
}

// requireLinearBits requires got to hold want's bits, except that where want is NaN got
// may be any NaN: which payload survives when two NaNs meet in a product or a sum is left
// open by the reference loop (the Go compiler may commute the operands; the kernels keep
// x's payload in a product and the accumulator's in a sum).
func requireLinearBits(t *testing.T, want, got []float32, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), what)
	for i := range want {
		wb, gb := math.Float32bits(want[i]), math.Float32bits(got[i])
		if wb != gb && !(math.IsNaN(float64(want[i])) && math.IsNaN(float64(got[i]))) {
			require.Failf(t, "bits differ", "%s: element %d: got %v (%#08x), want %v (%#08x)", what, i, got[i], gb, want[i], wb)
		}
	}
}

// linearRanges returns the output row ranges to test for out rows: empty ones, single rows,
// the whole range, prefixes, suffixes, ranges of every length up to 9 at ragged starts, and
// a few random ones.
func linearRanges(r *rand.Rand, out int) [][2]int {
	rs := [][2]int{{0, out}, {0, 0}, {out, out}, {out - 1, out}, {0, 1}, {out / 2, out / 2}}
	for n := 1; n <= min(9, out); n++ {
		o0 := r.IntN(out - n + 1)
		rs = append(rs, [2]int{o0, o0 + n})
	}
	for range 3 {
		o0 := r.IntN(out + 1)
		rs = append(rs, [2]int{o0, o0 + r.IntN(out-o0+1)})
	}
	return rs
}

// TestLinearKernelsMatchReference is the differential test of every implementation over
// in-sizes around the 8-lane vector and the 512-element tile, out-sizes 1..9 and larger,
// M from 1 to 130 (across the GEMM's 128-row chunk), every kind of row range and unaligned
// starts.
func TestLinearKernelsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	ins := []int{1, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 511, 512, 513, 1030, 4096 + 3}
	outs := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 37}
	ms := []int{1, 2, 3, 4, 5, 8, 17, 64, 65, 130}
	budget := 300_000 // multiply-adds of the reference per case, to keep -race runs short
	if testing.Short() {
		budget /= 8
	}
	for _, dt := range dtypes {
		for _, in := range ins {
			for _, out := range outs {
				for _, m := range ms {
					if m*in*out > budget && !(m <= 2 && out <= 9) {
						continue
					}
					ranges := linearRanges(r, out)
					if m > 3 { // every kind of range runs at M ≤ 3; larger M take the whole and two
						ranges = [][2]int{ranges[0], ranges[len(ranges)-2], ranges[len(ranges)-1]}
					}
					checkLinearCase(t, r, linearCase{dt: dt, m: m, in: in, out: out,
						xoff: r.IntN(8), woff: r.IntN(8), yoff: r.IntN(8), ranges: ranges})
				}
			}
		}
	}
}

// TestLinearKernelsSpecials runs values with infinities, NaNs, subnormals and magnitudes
// whose products and sums overflow: still the reference's bits (any NaN where it is NaN),
// and each implementation's GEMM rows are bitwise its GEMVs, NaN payloads included.
func TestLinearKernelsSpecials(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, dt := range dtypes {
		for _, in := range []int{1, 9, 33, 100, 1030} {
			for _, m := range []int{1, 2, 3, 8} {
				for _, out := range []int{1, 5, 9} {
					checkLinearCase(t, r, linearCase{dt: dt, m: m, in: in, out: out, xoff: r.IntN(8), woff: r.IntN(8), yoff: r.IntN(8),
						special: true, ranges: [][2]int{{0, out}, {out / 2, out}}})
				}
			}
			const m, out = 9, 7
			x := linearValues(r, m*in, 2, true)
			w := randMatrix(r, dt, out, in)
			if dt == dtype.F32 {
				copy(w.F32s(), linearValues(r, out*in, 1, true))
			} else {
				for i, f := range linearValues(r, out*in, 1, true) {
					w.Bits()[i] = dtype.FromF32(dt, f)
				}
			}
			for _, k := range linearKernels() {
				gemm := make([]float32, m*out)
				k.fn(gemm, x, w, m, 0, out)
				for row := range m {
					gemv := make([]float32, out)
					k.fn(gemv, x[row*in:(row+1)*in], w, 1, 0, out)
					requireBits(t, gemm[row*out:(row+1)*out], gemv, fmt.Sprintf("%s %v in=%d row %d", k.name, dt, in, row))
				}
			}
		}
	}
}

// TestLinearKernelsBatchInvariant checks, for every M from 1 to 64 (and across the 64-row
// chunk), that each row of the GEMM over the first M rows of x is bitwise the GEMV of that
// row, for every implementation and any split of the output rows over concurrent workers.
func TestLinearKernelsBatchInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	const in, out, maxM = 1027, 23, 66
	for _, dt := range dtypes {
		w := randMatrix(r, dt, out, in)
		x := randF32(r, maxM*in, 1)
		gemv := make([]float32, maxM*out)
		refLinear(gemv, x, w, 0, out) // every row alone: the reference is row by row
		for _, k := range linearKernels() {
			for row := range maxM {
				y := make([]float32, out)
				k.fn(y, x[row*in:(row+1)*in], w, 1, 0, out)
				requireBits(t, gemv[row*out:(row+1)*out], y, fmt.Sprintf("%s %v GEMV row %d", k.name, dt, row))
			}
			for m := 1; m <= maxM; m++ {
				y := make([]float32, m*out)
				cuts := []int{0, r.IntN(out + 1), r.IntN(out + 1), out}
				if cuts[1] > cuts[2] {
					cuts[1], cuts[2] = cuts[2], cuts[1]
				}
				var wg sync.WaitGroup
				for j := range 3 {
					wg.Go(func() { k.fn(y, x[:m*in], w, m, cuts[j], cuts[j+1]) })
				}
				wg.Wait()
				requireBits(t, gemv[:m*out], y, fmt.Sprintf("%s %v M=%d split %v", k.name, dt, m, cuts))
			}
		}
	}
}

// FuzzLinearKernels fuzzes sizes, row ranges, offsets and special values of both
// implementations against the reference.
func FuzzLinearKernels(f *testing.F) {
	f.Add(uint8(1), uint16(4099), uint8(9), uint8(0), uint8(0), uint8(9), uint16(0), false, uint64(1))
	f.Add(uint8(2), uint16(33), uint8(37), uint8(1), uint8(3), uint8(30), uint16(0x123), false, uint64(2))
	f.Add(uint8(65), uint16(9), uint8(5), uint8(2), uint8(1), uint8(4), uint16(0x1ff), true, uint64(3))
	f.Add(uint8(64), uint16(513), uint8(12), uint8(1), uint8(5), uint8(6), uint16(0x0a5), true, uint64(4))
	f.Add(uint8(0), uint16(4161), uint8(9), uint8(1), uint8(0), uint8(4), uint16(0), false, uint64(5))   // no rows of x (CI's find)
	f.Add(uint8(16), uint16(4161), uint8(9), uint8(1), uint8(10), uint8(0), uint16(0), false, uint64(6)) // no output rows at the end
	f.Fuzz(func(t *testing.T, m uint8, in uint16, out uint8, dt uint8, o0, o1 uint8, offs uint16, special bool, seed uint64) {
		c := linearCase{dt: dtypes[int(dt)%len(dtypes)], m: int(m % 70), in: int(in%4200) + 1, out: int(out%40) + 1,
			xoff: int(offs & 7), woff: int(offs >> 3 & 7), yoff: int(offs >> 6 & 7), special: special}
		if c.m*c.in*c.out > 2_000_000 {
			c.m = 2_000_000 / (c.in * c.out)
		}
		lo := int(o0) % (c.out + 1)
		c.ranges = [][2]int{{lo, lo + int(o1)%(c.out-lo+1)}}
		checkLinearCase(t, rand.New(rand.NewPCG(seed, 37)), c)
	})
}
