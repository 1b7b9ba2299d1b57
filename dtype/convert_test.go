package dtype_test

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// format describes a 16-bit float format for the table-driven conversion tests.
type format struct {
	t      dtype.DType
	widen  func(uint16) float32
	narrow func(float32) uint16
	// inf is the +inf pattern; every pattern above it (sign bit clear) is a NaN.
	inf uint16
	// infMag is the magnitude the pattern inf would have with an unbounded exponent: a value
	// at or beyond the midpoint between the largest finite value and infMag rounds to inf.
	infMag float64
}

var formats = []format{
	{dtype.BF16, dtype.BF16ToF32, dtype.F32ToBF16, 0x7f80, 0x1p128},
	{dtype.F16, dtype.F16ToF32, dtype.F32ToF16, 0x7c00, 0x1p16},
}

func (f format) isNaN(h uint16) bool { return h&0x7fff > f.inf }

// mag is the magnitude of a non-negative, non-NaN pattern; inf maps to infMag.
func (f format) mag(h uint16) float64 {
	if h == f.inf {
		return f.infMag
	}
	return float64(f.widen(h))
}

// refNarrow rounds x to the nearest pattern of f, ties to the even pattern, by searching
// the ordered table of magnitudes. It is the plain reference the fast narrowing is
// checked against; x must not be NaN.
func (f format) refNarrow(x float32) uint16 {
	sign := uint16(math.Float32bits(x)>>16) & 0x8000
	a := math.Abs(float64(x))
	if a >= f.infMag {
		return sign | f.inf
	}
	lo := uint16(sort.Search(int(f.inf)+1, func(i int) bool { return f.mag(uint16(i)) > a }) - 1)
	hi := lo + 1
	dlo, dhi := a-f.mag(lo), f.mag(hi)-a
	switch {
	case dlo < dhi:
		return sign | lo
	case dhi < dlo:
		return sign | hi
	case lo&1 == 0:
		return sign | lo
	default:
		return sign | hi
	}
}

// refF16 is the value of an IEEE half-precision pattern, decoded from its fields.
func refF16(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, man := int(h>>10)&0x1f, int(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(float64(man), -24)
	case 0x1f:
		if man != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(float64(1024+man), exp-25)
}

func TestBF16WidenExhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		got := math.Float32bits(dtype.BF16ToF32(h))
		if got != uint32(h)<<16 {
			require.Failf(t, "BF16ToF32", "%#04x widened to %#08x, want %#08x", h, got, uint32(h)<<16)
		}
	}
}

func TestF16WidenExhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		got, want := float64(dtype.F16ToF32(h)), refF16(h)
		if math.IsNaN(want) {
			if !math.IsNaN(got) || math.Signbit(got) != (h&0x8000 != 0) {
				require.Failf(t, "F16ToF32", "NaN %#04x widened to %v", h, got)
			}
			continue
		}
		if got != want || math.Signbit(got) != math.Signbit(want) {
			require.Failf(t, "F16ToF32", "%#04x widened to %v, want %v", h, got, want)
		}
	}
}

// TestRoundTripExhaustive widens every 16-bit pattern and narrows it back: every non-NaN
// pattern comes back bit for bit, every NaN stays a NaN of the same sign.
func TestRoundTripExhaustive(t *testing.T) {
	for _, f := range formats {
		t.Run(f.t.String(), func(t *testing.T) {
			nans := 0
			for i := range 1 << 16 {
				h := uint16(i)
				back := f.narrow(f.widen(h))
				if f.isNaN(h) {
					nans++
					if !f.isNaN(back) || back&0x8000 != h&0x8000 {
						require.Failf(t, "NaN round trip", "%v NaN %#04x came back as %#04x", f.t, h, back)
					}
					continue
				}
				if back != h {
					require.Failf(t, "round trip", "%v %#04x came back as %#04x", f.t, h, back)
				}
			}
			require.Equal(t, 2*int(0x7fff-f.inf), nans)
		})
	}
}

// TestNarrowMidpoints checks round-to-nearest-even at every halfway point between two
// adjacent non-negative patterns (including the one between the largest finite value and
// inf) and one f32 ulp either side of it, for both signs.
func TestNarrowMidpoints(t *testing.T) {
	for _, f := range formats {
		t.Run(f.t.String(), func(t *testing.T) {
			for h := uint16(0); h < f.inf; h++ {
				mid := (f.mag(h) + f.mag(h+1)) / 2
				x := float32(mid)
				require.Equal(t, mid, float64(x), "midpoint above %#04x is not an f32", h)
				even := h
				if h&1 != 0 {
					even = h + 1
				}
				down := math.Nextafter32(x, 0)
				up := math.Nextafter32(x, float32(math.Inf(1)))
				for _, sign := range []uint16{0, 0x8000} {
					neg := func(v float32) float32 {
						if sign != 0 {
							return -v
						}
						return v
					}
					if got := f.narrow(neg(x)); got != sign|even {
						require.Failf(t, "tie", "%v: %#08x (%g) narrowed to %#04x, want %#04x", f.t, math.Float32bits(neg(x)), neg(x), got, sign|even)
					}
					if got := f.narrow(neg(down)); got != sign|h {
						require.Failf(t, "below tie", "%v: %#08x narrowed to %#04x, want %#04x", f.t, math.Float32bits(neg(down)), got, sign|h)
					}
					if got := f.narrow(neg(up)); got != sign|(h+1) {
						require.Failf(t, "above tie", "%v: %#08x narrowed to %#04x, want %#04x", f.t, math.Float32bits(neg(up)), got, sign|(h+1))
					}
				}
			}
		})
	}
}

// TestNarrowSweep compares narrowing against the table-search reference on f32 patterns
// spread over the whole 32-bit space.
func TestNarrowSweep(t *testing.T) {
	const stride = 16411 // prime: low bits vary across the sweep
	for _, f := range formats {
		t.Run(f.t.String(), func(t *testing.T) {
			checked := 0
			for u := uint64(0); u < 1<<32; u += stride {
				x := math.Float32frombits(uint32(u))
				if x != x {
					continue
				}
				if got, want := f.narrow(x), f.refNarrow(x); got != want {
					require.Failf(t, "narrow", "%v: %#08x (%g) narrowed to %#04x, want %#04x", f.t, uint32(u), x, got, want)
				}
				checked++
			}
			require.Greater(t, checked, 200000)
		})
	}
}

func TestF32ToBF16Cases(t *testing.T) {
	for _, tc := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81},
		{0x3f807fff, 0x3f80},
		{0xbf818000, 0xbf82},
		{0x00000000, 0x0000},
		{0x80000000, 0x8000}, // negative zero keeps its sign
		{0x7f7fffff, 0x7f80}, // max f32 overflows to inf
		{0xff7fffff, 0xff80},
		{0x7f7f8000, 0x7f80}, // tie above max bf16, odd: to inf
		{0x7f7f7fff, 0x7f7f},
		{0x7f800000, 0x7f80},
		{0xff800000, 0xff80},
		{0x00008000, 0x0000}, // subnormal tie to even zero
		{0x00018000, 0x0002},
		{0x80008001, 0x8001},
	} {
		t.Run(fmt.Sprintf("%#08x", tc.in), func(t *testing.T) {
			got := dtype.F32ToBF16(math.Float32frombits(tc.in))
			require.Equalf(t, tc.want, got, "got %#04x want %#04x", got, tc.want)
			require.Equal(t, tc.want, dtype.FromF32(dtype.BF16, math.Float32frombits(tc.in)))
		})
	}
}

func TestF32ToF16Cases(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   float32
		want uint16
	}{
		{"one", 1, 0x3c00},
		{"one+half ulp (tie, even)", 1 + 0x1p-11, 0x3c00},
		{"one+3 half ulps (tie, odd up)", 1 + 3*0x1p-11, 0x3c02},
		{"one+half ulp+tiny", 1 + 0x1p-11 + 0x1p-23, 0x3c01},
		{"max", 65504, 0x7bff},
		{"below overflow tie", 65519, 0x7bff},
		{"overflow tie", 65520, 0x7c00},
		{"-overflow tie", -65520, 0xfc00},
		{"large", 1e10, 0x7c00},
		{"max f32", math.MaxFloat32, 0x7c00},
		{"+inf", float32(math.Inf(1)), 0x7c00},
		{"-inf", float32(math.Inf(-1)), 0xfc00},
		{"zero", 0, 0x0000},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"min subnormal", 0x1p-24, 0x0001},
		{"half min subnormal (tie to zero)", 0x1p-25, 0x0000},
		{"-half min subnormal", -0x1p-25, 0x8000},
		{"half min subnormal+tiny", 0x1p-25 + 0x1p-40, 0x0001},
		{"3 half subnormals (tie up)", 3 * 0x1p-25, 0x0002},
		{"5 half subnormals (tie down)", 5 * 0x1p-25, 0x0002},
		{"7 half subnormals (tie up)", 7 * 0x1p-25, 0x0004},
		{"max subnormal", 1023 * 0x1p-24, 0x03ff},
		{"tie to min normal", 1023.5 * 0x1p-24, 0x0400},
		{"min normal", 0x1p-14, 0x0400},
		{"quarter min subnormal", 0x1p-26, 0x0000},
		{"tiny", 1e-30, 0x0000},
		{"-tiny", -1e-30, 0x8000},
		{"f32 min subnormal", math.SmallestNonzeroFloat32, 0x0000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := dtype.F32ToF16(tc.in)
			require.Equalf(t, tc.want, got, "got %#04x want %#04x", got, tc.want)
			require.Equal(t, tc.want, dtype.FromF32(dtype.F16, tc.in))
		})
	}
}

func TestNarrowNaN(t *testing.T) {
	for _, f := range formats {
		for _, in := range []uint32{0x7fc00000, 0x7f800001, 0x7fffffff, 0x7f802000, 0xffc00001, 0xff800001, 0xffffffff} {
			t.Run(fmt.Sprintf("%v/%#08x", f.t, in), func(t *testing.T) {
				got := f.narrow(math.Float32frombits(in))
				require.Truef(t, f.isNaN(got), "NaN %#08x narrowed to %#04x, not a NaN", in, got)
				require.Equal(t, uint16(in>>16)&0x8000, got&0x8000, "sign lost")
				require.True(t, math.IsNaN(float64(f.widen(got))))
			})
		}
	}
}

func TestDispatch(t *testing.T) {
	for _, tc := range []struct {
		t    dtype.DType
		bits uint16
		val  float32
	}{
		{dtype.BF16, 0x3f80, 1},
		{dtype.BF16, 0xc040, -3},
		{dtype.BF16, 0x4049, 3.140625},
		{dtype.F16, 0x3c00, 1},
		{dtype.F16, 0xc200, -3},
		{dtype.F16, 0x0001, 0x1p-24},
	} {
		t.Run(fmt.Sprintf("%v/%#04x", tc.t, tc.bits), func(t *testing.T) {
			require.Equal(t, tc.val, dtype.ToF32(tc.t, tc.bits))
			require.Equal(t, tc.bits, dtype.FromF32(tc.t, tc.val))
		})
	}
}
