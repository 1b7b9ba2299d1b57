//go:build amd64 && !noasm

package layers

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/vec"
)

// The kernels (reduce_amd64.s) against the Go of reduce.go, bit for bit, with one exception:
// where two NaNs meet in a commutative operation (an add or multiply of dot, dot4, sum, axpy,
// axpy4), x86 returns the first source's NaN, and which operand is first in the Go's scalar
// ADDSS/MULSS is the register allocator's choice, not the source's (Go 1.26: in dotAcc,
// lanes 0-6 add the product onto the sum and lane 7 the sum onto the product; combine8
// computes a4+a0). Those kernels' NaN results are compared by math.IsNaN (requireSameF32);
// everything else, rowMax and expSub whole (no commutative operation meets two NaNs there),
// by bits.

// requireSameF32 is requireBits, except that any NaN matches any NaN.
func requireSameF32(t testing.TB, want, got []float32, msg string) {
	t.Helper()
	require.Equal(t, len(want), len(got), msg)
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) && !(want[i] != want[i] && got[i] != got[i]) {
			require.Failf(t, "bits differ", "%s: element %d: got %v (%#08x), want %v (%#08x)",
				msg, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// specials are inputs the kernels must pass through as the Go does: signed zeros and
// infinities, quiet and signalling NaNs of both signs with payloads, subnormals and the
// extremes of the normal range.
var specials = []uint32{
	0x00000000, 0x80000000, 0x7f800000, 0xff800000,
	0x7fc00000, 0xffc00000, 0x7fc12345, 0xffd54321, 0x7f800001, 0xff812345,
	0x00000001, 0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff,
}

// genKinds name the input distributions of reduceInput.
var genKinds = []string{"uniform", "specials", "extremes", "tiny", "zeros"}

// reduceInput returns n values of distribution kind: uniform in [−3, 3); a quarter of them
// specials; random signs and exponents over the whole f32 range, so that products overflow
// and underflow; signed zeros, subnormals and ±1e−30 (products and sums of signed zeros, no
// NaN); or only ±0, −1, −2.5 and NaN (rowMax's zero rule).
func reduceInput(r *rand.Rand, kind string, n int) []float32 {
	x := randF32(r, n, 3)
	for i := range x {
		switch kind {
		case "specials":
			if r.IntN(4) == 0 {
				x[i] = math.Float32frombits(specials[r.IntN(len(specials))])
			}
		case "extremes":
			x[i] = math.Float32frombits(r.Uint32()&^(0xff<<23) | uint32(r.IntN(255))<<23)
		case "tiny":
			x[i] = []float32{0, float32(math.Copysign(0, -1)), math.Float32frombits(1), math.Float32frombits(0x807fffff), 1e-30, -1e-30}[r.IntN(6)]
		case "zeros":
			x[i] = []float32{0, float32(math.Copysign(0, -1)), -1, -2.5, float32(math.NaN())}[r.IntN(5)]
		}
	}
	return x
}

// at returns a copy of x starting off elements into a fresh buffer, so that kernels see
// every alignment.
func at(x []float32, off int) []float32 {
	b := make([]float32, off+len(x))
	copy(b[off:], x)
	return b[off:]
}

// guardBits fills the guard elements around an output; guarded returns a buffer of g guard
// elements, then n copies of x, then g guards, and the output inside it.
const guardBits = 0x7fbadbad

func guarded(x []float32, off int) (buf, out []float32) {
	const g = 8
	buf = make([]float32, off+g+len(x)+g)
	for i := range buf {
		buf[i] = math.Float32frombits(guardBits)
	}
	out = buf[off+g : off+g+len(x)]
	copy(out, x)
	return buf, out
}

// TestReduceAVX2Kernels runs every kernel on n = 8…300 elements (all n%8 tails) at every
// start offset 0…7 of every operand, for each input distribution, against the Go; outputs
// sit between guard elements that must stay untouched.
func TestReduceAVX2Kernels(t *testing.T) {
	if !vec.Accelerated() {
		t.Skip("CPU lacks AVX2/F16C: the assembly does not run")
	}
	r := rand.New(rand.NewPCG(71, 72))
	for _, kind := range genKinds {
		for n := Lanes; n <= 300; n++ {
			for off := range 8 {
				msg := fmt.Sprintf("%s n=%d off=%d", kind, n, off)
				x := at(reduceInput(r, kind, n), off)
				var w [4][]float32
				for i := range w {
					w[i] = at(reduceInput(r, kind, n), (off+i+1)%8)
				}
				checkReduceKernels(t, r, x, w, reduceInput(r, kind, 4), off, msg)
			}
		}
	}
}

// checkReduceKernels compares every kernel with its Go on x, the rows w (each len(x) long)
// and the scalars a, outputs at offset off between guards.
func checkReduceKernels(t *testing.T, r *rand.Rand, x []float32, w [4][]float32, a []float32, off int, msg string) {
	t.Helper()
	n := len(x)
	requireSameF32(t, []float32{dotGo(x, w[0])}, []float32{dotAVX2(&x[0], &w[0][0], n)}, "dot "+msg)
	requireSameF32(t, []float32{sumGo(x)}, []float32{sumAVX2(&x[0], n)}, "sum "+msg)

	var want4 [4]float32
	dot4Go(&want4, x, w[0], w[1], w[2], w[3])
	buf, out := guarded(make([]float32, 4), off)
	dot4AVX2((*[4]float32)(out), &x[0], &w[0][0], &w[1][0], &w[2][0], &w[3][0], n)
	checkGuarded(t, buf, out, want4[:], false, "dot4 "+msg)

	y := reduceInput(r, "uniform", n)
	if r.IntN(2) == 0 {
		y = w[3] // specials in y too
	}
	want := append([]float32(nil), y...)
	axpyGo(want, a[0], x)
	buf, out = guarded(y, off)
	axpyAVX2(&out[0], a[0], &x[0], n)
	checkGuarded(t, buf, out, want, false, "axpy "+msg)

	a4 := (*[4]float32)(a)
	want = append(want[:0], y...)
	axpy4Go(want, a4, x, w[0], w[1], w[2])
	buf, out = guarded(y, off)
	axpy4AVX2(&out[0], a4, &x[0], &w[0][0], &w[1][0], &w[2][0], n)
	checkGuarded(t, buf, out, want, false, "axpy4 "+msg)

	m := rowMaxGo(x)
	got := maxAVX2(&x[0], n)
	if m == 0 {
		require.Zero(t, got, "max "+msg) // the kernel may keep the other zero: rowMax fixes it
	} else {
		requireBits(t, []float32{m}, []float32{got}, "max "+msg)
	}
	requireBits(t, []float32{m}, []float32{rowMax(x)}, "rowMax "+msg)

	for _, mm := range []float32{m, 0, a[1], float32(math.Inf(1)), float32(math.NaN())} {
		want = append(want[:0], x...)
		expSubGo(want, mm)
		buf, out = guarded(x, off)
		expSubAVX2(&out[0], mm, n)
		checkGuarded(t, buf, out, want, true, fmt.Sprintf("expSub m=%v %s", mm, msg))
	}

	want = make([]float32, n)
	swigluGo(want, x, w[0])
	buf, out = guarded(make([]float32, n), off)
	swigluAVX2(&out[0], &x[0], &w[0][0], n)
	checkGuarded(t, buf, out, want, true, "swiglu "+msg)
	buf, out = guarded(x, off) // in place, as the MLP runs it
	swigluAVX2(&out[0], &out[0], &w[0][0], n)
	checkGuarded(t, buf, out, want, true, "swiglu in place "+msg)
}

// checkGuarded requires out to hold want (NaN payloads too if nanBits) and the rest of buf
// the guard value.
func checkGuarded(t *testing.T, buf, out, want []float32, nanBits bool, msg string) {
	t.Helper()
	if nanBits {
		requireBits(t, want, out, msg)
	} else {
		requireSameF32(t, want, out, msg)
	}
	start := cap(buf) - cap(out)
	for i, v := range buf {
		if (i < start || i >= start+len(out)) && math.Float32bits(v) != guardBits {
			require.Failf(t, "guard overwritten", "%s: element %d of %d around [%d, %d): %#08x", msg, i, len(buf), start, start+len(out), math.Float32bits(v))
		}
	}
}

// TestReduceDispatch checks the functions attention calls (assembly from 8 elements on, Go
// below) against the Go for every n from 0, the softmax steps from 1.
func TestReduceDispatch(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	for _, kind := range genKinds {
		for n := range 300 {
			msg := fmt.Sprintf("%s n=%d", kind, n)
			x, w0, w1, w2, w3 := reduceInput(r, kind, n), reduceInput(r, kind, n), reduceInput(r, kind, n), reduceInput(r, kind, n), reduceInput(r, kind, n)
			requireSameF32(t, []float32{dotGo(x, w0)}, []float32{dot(x, w0)}, "dot "+msg)
			requireSameF32(t, []float32{sumGo(x)}, []float32{sum(x)}, "sum "+msg)
			var want4, got4 [4]float32
			dot4Go(&want4, x, w0, w1, w2, w3)
			dot4(&got4, x, w0, w1, w2, w3)
			requireSameF32(t, want4[:], got4[:], "dot4 "+msg)
			a := [4]float32{0.37, -1.5, 3, float32(math.Inf(-1))}
			want, got := append([]float32(nil), w3...), append([]float32(nil), w3...)
			axpyGo(want, a[0], x)
			axpy(got, a[0], x)
			requireSameF32(t, want, got, "axpy "+msg)
			axpy4Go(want, &a, x, w0, w1, w2)
			axpy4(got, &a, x, w0, w1, w2)
			requireSameF32(t, want, got, "axpy4 "+msg)
			if n > 0 {
				m := rowMaxGo(x)
				requireBits(t, []float32{m}, []float32{rowMax(x)}, "rowMax "+msg)
				want, got = append(want[:0], x...), append(got[:0], x...)
				expSubGo(want, m)
				expSub(got, m)
				requireBits(t, want, got, "expSub "+msg)
			}
			want, got = make([]float32, n), make([]float32, n)
			swigluGo(want, x, w0)
			swiglu(got, x, w0)
			requireBits(t, want, got, "swiglu "+msg)
		}
	}
}

// TestExpSubAVX2AllInputs compares the vector expf with expf on a stride through all 2³²
// f32 bit patterns (every one with LAYERS_EXHAUSTIVE=1, tens of seconds):
//
//	LAYERS_EXHAUSTIVE=1 go test -run ExpSubAVX2AllInputs -v ./layers/
func TestExpSubAVX2AllInputs(t *testing.T) {
	if !vec.Accelerated() {
		t.Skip("CPU lacks AVX2/F16C: the assembly does not run")
	}
	stride := uint64(4099)
	if os.Getenv("LAYERS_EXHAUSTIVE") != "" {
		stride = 1
	}
	const batch = 1 << 12
	zero := []float32{0} // m = 0 from memory: x − m is x but quieted NaNs, at run time
	workers := runtime.GOMAXPROCS(0)
	errs := make([]string, workers)
	var wg sync.WaitGroup
	for wk := range workers {
		wg.Go(func() {
			x, want := make([]float32, batch), make([]float32, batch)
			for b := uint64(wk) * batch * stride; b < 1<<32 && errs[wk] == ""; b += uint64(workers) * batch * stride {
				k := 0
				for u := b; k < batch && u < 1<<32; u += stride {
					x[k] = math.Float32frombits(uint32(u))
					k++
				}
				copy(want, x[:k])
				expSubGo(want[:k], zero[0])
				expSubAVX2(&x[0], zero[0], k)
				for i := range k {
					if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
						errs[wk] = fmt.Sprintf("input %#08x: want %#08x, got %#08x", uint32(b+uint64(i)*stride), math.Float32bits(want[i]), math.Float32bits(x[i]))
						break
					}
				}
			}
		})
	}
	wg.Wait()
	for _, e := range errs {
		require.Empty(t, e)
	}
}

// FuzzReduceAVX2 reads arbitrary bit patterns as the operands of every kernel.
func FuzzReduceAVX2(f *testing.F) {
	if !vec.Accelerated() {
		f.Skip("CPU lacks AVX2/F16C: the assembly does not run")
	}
	r := rand.New(rand.NewPCG(75, 76))
	for _, n := range []int{8, 13, 16, 31, 128, 131} {
		for _, kind := range genKinds {
			b := make([]byte, 0, 5*4*n)
			for _, v := range reduceInput(r, kind, 5*n) {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
			}
			f.Add(b, float32(0.5), float32(-2), uint8(n%8))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, a0, a1 float32, off uint8) {
		n := len(data) / 4 / 5
		if n < Lanes {
			return
		}
		v := make([]float32, 5*n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		o := int(off % 8)
		x := at(v[:n], o)
		var w [4][]float32
		for i := range w {
			w[i] = at(v[(i+1)*n:(i+2)*n], (o+i+1)%8)
		}
		checkReduceKernels(t, rand.New(rand.NewPCG(uint64(n), uint64(off))), x, w, []float32{a0, a1, a0 * a1, -a1}, o, "fuzz")
	})
}

// BenchmarkReduceKernels times the attention kernels at its decode sizes (head dimension 128,
// a score row of 2048 positions), the assembly ("asm") against the portable Go ("go") in the
// same run:
//
//	go test -run '^$' -bench ReduceKernels -count 3 ./layers/
func BenchmarkReduceKernels(b *testing.B) {
	if !vec.Accelerated() {
		b.Skip("CPU lacks AVX2/F16C: the assembly does not run")
	}
	r := rand.New(rand.NewPCG(79, 80))
	const d, P = 128, 2048
	q, y := randF32(r, d, 1), randF32(r, d, 1)
	k0, k1, k2, k3 := randF32(r, d, 1), randF32(r, d, 1), randF32(r, d, 1), randF32(r, d, 1)
	row, work := randF32(r, P, 4), make([]float32, P)
	a := [4]float32{0.1, 0.2, 0.3, 0.4}
	var out [4]float32
	var sink float32
	for _, k := range []struct {
		name      string
		asm, pure func()
	}{
		{"dot4/d=128", func() { dot4AVX2(&out, &q[0], &k0[0], &k1[0], &k2[0], &k3[0], d) }, func() { dot4Go(&out, q, k0, k1, k2, k3) }},
		{"dot/d=128", func() { sink += dotAVX2(&q[0], &k0[0], d) }, func() { sink += dotGo(q, k0) }},
		{"axpy4/d=128", func() { axpy4AVX2(&y[0], &a, &k0[0], &k1[0], &k2[0], &k3[0], d) }, func() { axpy4Go(y, &a, k0, k1, k2, k3) }},
		{"axpy/d=128", func() { axpyAVX2(&y[0], a[0], &k0[0], d) }, func() { axpyGo(y, a[0], k0) }},
		{"sum/P=2048", func() { sink += sumAVX2(&row[0], P) }, func() { sink += sumGo(row) }},
		{"max/P=2048", func() { sink += maxAVX2(&row[0], P) }, func() { sink += rowMaxGo(row) }},
		{"expSub/P=2048", func() { copy(work, row); expSubAVX2(&work[0], 4, P) }, func() { copy(work, row); expSubGo(work, 4) }},
	} {
		for _, impl := range []struct {
			name string
			fn   func()
		}{{"asm", k.asm}, {"go", k.pure}} {
			b.Run(k.name+"/impl="+impl.name, func(b *testing.B) {
				for b.Loop() {
					impl.fn()
				}
			})
		}
	}
	_ = sink
}
