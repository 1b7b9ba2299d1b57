package vec

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/dtype"
)

// lengths are the slice lengths every differential test runs: empty, around the 8-lane
// vector and the 32-element unrolled iteration, and long with a ragged tail.
var lengths = []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000 + 3}

// maxOff is the largest element offset of a slice start from its allocation.
const maxOff = 7

// guard is how many elements on either side of every destination must stay untouched.
const guard = 16

const (
	sentinel32 = 0x7fa5a5a5 // a signalling NaN no kernel produces
	sentinel16 = 0xa5a5
)

// guardedF32 returns a destination of n elements starting off elements into a larger
// buffer whose other elements hold sentinel32; check asserts they still do.
func guardedF32(t testing.TB, n, off int) (dst []float32, check func()) {
	buf := make([]float32, 2*guard+off+n)
	for i := range buf {
		buf[i] = math.Float32frombits(sentinel32)
	}
	lo, hi := guard+off, guard+off+n
	return buf[lo:hi:hi], func() {
		t.Helper()
		for i, f := range buf {
			if (i < lo || i >= hi) && math.Float32bits(f) != sentinel32 {
				require.Failf(t, "guard overwritten", "buffer element %d (destination is [%d,%d)) = %#08x", i, lo, hi, math.Float32bits(f))
			}
		}
	}
}

// guarded16 is guardedF32 for 16-bit elements.
func guarded16(t testing.TB, n, off int) (dst []uint16, check func()) {
	buf := make([]uint16, 2*guard+off+n)
	for i := range buf {
		buf[i] = sentinel16
	}
	lo, hi := guard+off, guard+off+n
	return buf[lo:hi:hi], func() {
		t.Helper()
		for i, h := range buf {
			if (i < lo || i >= hi) && h != sentinel16 {
				require.Failf(t, "guard overwritten", "buffer element %d (destination is [%d,%d)) = %#04x", i, lo, hi, h)
			}
		}
	}
}

// offsetF32 returns a copy of src starting off elements into a fresh allocation.
func offsetF32(src []float32, off int) []float32 {
	buf := make([]float32, off+len(src))
	copy(buf[off:], src)
	return buf[off:]
}

// offset16 returns a copy of src starting off elements into a fresh allocation.
func offset16(src []uint16, off int) []uint16 {
	buf := make([]uint16, off+len(src))
	copy(buf[off:], src)
	return buf[off:]
}

// requireBitsF32 requires got to hold exactly the bits of want.
func requireBitsF32(t testing.TB, want, got []float32, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		if w, g := math.Float32bits(want[i]), math.Float32bits(got[i]); w != g {
			require.Failf(t, "bits differ", "%s: element %d of %d: want %#08x (%v), got %#08x (%v)",
				what, i, len(want), w, want[i], g, got[i])
		}
	}
}

// requireBits16 requires got to equal want.
func requireBits16(t testing.TB, want, got []uint16, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		if want[i] != got[i] {
			require.Failf(t, "bits differ", "%s: element %d of %d: want %#04x, got %#04x",
				what, i, len(want), want[i], got[i])
		}
	}
}

// specialF32 lists the float32 bit patterns where conversions and adds go wrong first.
var specialF32 = []uint32{
	0x00000000, 0x80000000, // ±0
	0x7f800000, 0xff800000, // ±inf
	0x7fc00000, 0xffc00000, 0x7fc00001, 0xffc12345, 0x7fffffff, 0xffffffff, // quiet NaNs with payloads
	0x7f800001, 0xff800001, 0x7fbfffff, 0x7f812345, 0x7f800100, 0x7f802000, 0x7f80ffff, // signalling NaNs
	0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00008000, 0x00018000, // f32 subnormals
	0x00800000, 0x80800000, 0x7f7fffff, 0xff7fffff, // min normal, max finite
	0x3f800000, 0xbf800000, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x3f808001, 0x3f807fff, // bf16 ties around 1
	0x7f7f8000, 0x7f7f7fff, 0xff7f8000, 0x7f7effff, 0x7f7f0000, // bf16: round to inf or to max finite
	0x477fe000, 0x477fefff, 0x477ff000, 0xc77ff000, 0x477fffff, 0x47800000, // f16: 65504, below/at the tie to inf
	0x33800000, 0x33000000, 0x33000001, 0xb3000000, 0x32ffffff, 0x33c00000, 0x34200000, // f16 subnormal ties
	0x387fc000, 0x387fe000, 0x38800000, 0x387ff000, // f16 largest subnormal / smallest normal
	0x3f801000, 0x3f803000, 0x3f802000, 0x3f801001, // f16 ties around 1
}

// randF32 draws a float32 from a mixture: mostly moderate finite values (sums stay finite
// and rounding is exercised), plus random bit patterns, specials and huge values.
func randF32(r *rand.Rand) float32 {
	switch p := r.IntN(100); {
	case p < 70:
		return float32(r.NormFloat64() * math.Ldexp(1, r.IntN(24)-12))
	case p < 80:
		return math.Float32frombits(r.Uint32())
	case p < 90:
		return math.Float32frombits(specialF32[r.IntN(len(specialF32))])
	default:
		return float32(r.NormFloat64() * 3e38)
	}
}

// rand16 draws a 16-bit pattern of dtype t: mostly moderate finite values, plus uniformly
// random patterns (NaNs, infinities and subnormals among them).
func rand16(r *rand.Rand, t dtype.DType) uint16 {
	if r.IntN(4) == 0 {
		return uint16(r.Uint32())
	}
	return dtype.FromF32(t, float32(r.NormFloat64()*math.Ldexp(1, r.IntN(16)-8)))
}

func randSliceF32(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = randF32(r)
	}
	return s
}

func randSlice16(r *rand.Rand, t dtype.DType, n int) []uint16 {
	s := make([]uint16, n)
	for i := range s {
		s[i] = rand16(r, t)
	}
	return s
}

// bytesToF32 reinterprets little-endian bytes as float32s (a trailing partial word is dropped).
func bytesToF32(b []byte) []float32 {
	s := make([]float32, len(b)/4)
	for i := range s {
		s[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return s
}

// bytesTo16 reinterprets little-endian bytes as 16-bit words.
func bytesTo16(b []byte) []uint16 {
	s := make([]uint16, len(b)/2)
	for i := range s {
		s[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return s
}

// dtypes16 are the 16-bit dtypes Widen, Narrow and Sum16 accept.
var dtypes16 = []dtype.DType{dtype.BF16, dtype.F16}

// NaN payloads of sums. When two NaNs meet in an add, x86 returns the first operand's
// payload; the kernels always put the accumulator first, but the Go compiler treats float
// addition as commutative and may swap the operands of the reference loop's add, so the
// reference itself does not define which payload survives. The sum checks below therefore
// demand exact bits for every element, except where the element's inputs hold a NaN and
// could also produce another (a second NaN input, an infinity, or a magnitude that can
// overflow): there the result must be NaN with the quieted payload of one of its NaN
// inputs or the x86 default NaN.

const defaultNaN32 = 0xffc00000 // what x86 produces for inf-inf

func isNaN32(u uint32) bool { return u&0x7fffffff > 0x7f800000 }

// nanAmbiguous reports whether the reference loop's result for an element with inputs in
// (f32 bit patterns) may carry one of several NaN payloads.
func nanAmbiguous(in []uint32) bool {
	nans, risky := 0, false
	for _, u := range in {
		switch {
		case isNaN32(u):
			nans++
		case u&0x7fffffff >= 0x7d800000: // |x| ≥ 2¹²⁴: inf, or can overflow to inf in ≤ 9 adds
			risky = true
		}
	}
	return nans >= 2 || nans == 1 && risky
}

// requireSumElem checks one sum element: exact bits, or for an ambiguous element a NaN
// whose payload is allowed. in are the f32 inputs, want and got the result patterns, and
// narrow maps an f32 pattern to the result type (identity for f32 results).
func requireSumElem(t testing.TB, what string, i int, in []uint32, want, got uint32, narrow func(uint32) uint32) {
	t.Helper()
	if want == got {
		return
	}
	if nanAmbiguous(in) {
		allowed := []uint32{narrow(defaultNaN32)}
		for _, u := range in {
			if isNaN32(u) {
				allowed = append(allowed, narrow(u|0x00400000))
			}
		}
		if slices.Contains(allowed, got) && slices.Contains(allowed, want) {
			return
		}
	}
	require.Failf(t, "bits differ", "%s: element %d: inputs %#08x: want %#08x, got %#08x", what, i, in, want, got)
}

func identity(u uint32) uint32 { return u }

// requireSumF32 compares f32 sums of srcs element by element (see requireSumElem).
func requireSumF32(t testing.TB, what string, want, got []float32, srcs [][]float32) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		if w, g := math.Float32bits(want[i]), math.Float32bits(got[i]); w != g {
			in := make([]uint32, len(srcs))
			for k, s := range srcs {
				in[k] = math.Float32bits(s[i])
			}
			requireSumElem(t, what, i, in, w, g, identity)
		}
	}
}

// requireSum16 compares sums of 16-bit srcs of dtype typ, narrowed to typ when want and
// got are 16-bit (f32 is false) or left in f32 (see requireSumElem).
func requireSum16(t testing.TB, what string, typ dtype.DType, want, got []uint32, srcs [][]uint16, f32 bool) {
	t.Helper()
	require.Len(t, got, len(want), what)
	narrow := identity
	if !f32 {
		narrow = func(u uint32) uint32 { return uint32(dtype.FromF32(typ, math.Float32frombits(u))) }
	}
	for i := range want {
		if want[i] != got[i] {
			in := make([]uint32, len(srcs))
			for k, s := range srcs {
				in[k] = math.Float32bits(dtype.ToF32(typ, s[i]))
			}
			requireSumElem(t, what, i, in, want[i], got[i], narrow)
		}
	}
}

func widen32(s []uint16) []uint32 {
	u := make([]uint32, len(s))
	for i, h := range s {
		u[i] = uint32(h)
	}
	return u
}

func bitsOf(s []float32) []uint32 {
	u := make([]uint32, len(s))
	for i, f := range s {
		u[i] = math.Float32bits(f)
	}
	return u
}
