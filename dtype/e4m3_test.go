package dtype

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// ocpE4M3 is the value of an e4m3 code as the OCP FP8 specification defines it, computed
// in float64 from the fields: (-1)^s · 2^(e-7) · (1 + m/8) for e > 0, (-1)^s · 2^-6 · m/8
// for e = 0, NaN for e = 15, m = 7 (no infinities).
func ocpE4M3(c uint8) float64 {
	s, e, m := c>>7, int(c>>3)&15, float64(c&7)
	v := math.Ldexp(1+m/8, e-7)
	switch {
	case e == 15 && m == 7:
		return math.NaN()
	case e == 0:
		v = math.Ldexp(m/8, -6)
	}
	if s == 1 {
		return -v
	}
	return v
}

func TestE4M3DecodesEveryCodeToTheOCPValue(t *testing.T) {
	nans := 0
	for c := range 256 {
		got, want := E4M3ToF32(uint8(c)), ocpE4M3(uint8(c))
		if math.IsNaN(want) {
			nans++
			require.True(t, math.IsNaN(float64(got)), "code %#02x", c)
			require.Equal(t, c>>7 == 1, math.Signbit(float64(got)), "code %#02x: sign of NaN", c)
			continue
		}
		require.Equal(t, math.Float64bits(want), math.Float64bits(float64(got)), "code %#02x: got %g, want %g", c, got, want)
	}
	require.Equal(t, 2, nans, "only S.1111.111 is NaN")
	// spot values from the specification's table
	for c, want := range map[uint8]float64{0x00: 0, 0x01: 0x1p-9, 0x07: 7 * 0x1p-9, 0x08: 0x1p-6, 0x38: 1, 0x40: 2,
		0x77: 240, 0x7e: 448, 0xfe: -448, 0xb8: -1} {
		require.Equal(t, want, float64(E4M3ToF32(c)), "code %#02x", c)
	}
	require.True(t, math.Signbit(float64(E4M3ToF32(0x80))), "0x80 is -0")
}

// referenceE4M3 encodes by search: the finite code nearest to f, ties to the even code (the
// one whose mantissa's last bit is 0), magnitudes beyond 448 saturating, NaN to NaN.
func referenceE4M3(f float32) uint8 {
	x := float64(f)
	if math.IsNaN(x) {
		if math.Signbit(x) {
			return 0xff
		}
		return 0x7f
	}
	var sign uint8
	if math.Signbit(x) {
		sign, x = 0x80, -x
	}
	best := uint8(0)
	for c := uint8(1); c <= 0x7e; c++ {
		d, bd := math.Abs(ocpE4M3(c)-x), math.Abs(ocpE4M3(best)-x)
		if d < bd || d == bd && c&1 == 0 {
			best = c
		}
	}
	return sign | best
}

func TestF32ToE4M3MatchesTheReference(t *testing.T) {
	check := func(f float32) {
		require.Equal(t, referenceE4M3(f), F32ToE4M3(f), "%g (%#08x)", f, math.Float32bits(f))
	}
	for h := range 1 << 16 { // every bf16 value, NaNs and infinities included
		check(BF16ToF32(uint16(h)))
	}
	for c := uint8(0); c < 0x7e; c++ { // each midpoint between neighbours, and one ulp either side
		mid := float32((ocpE4M3(c) + ocpE4M3(c+1)) / 2)
		for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1000)} {
			check(f)
			check(-f)
		}
	}
	for _, f := range []float32{448, 464, 479.9, 480, 1e30, float32(math.Inf(1)), 0x1p-10, 0x1p-11, 3 * 0x1p-11, math.SmallestNonzeroFloat32} {
		check(f)
		check(-f)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		check(math.Float32frombits(rng.Uint32()))
	}
}

func TestE4M3RoundTripsEveryCode(t *testing.T) {
	for c := range 256 {
		if c&0x7f == 0x7f {
			continue
		}
		require.Equal(t, uint8(c), F32ToE4M3(E4M3ToF32(uint8(c))), "code %#02x", c)
	}
}

func TestF32ToE4M3NaNAndSaturation(t *testing.T) {
	nan := float32(math.NaN())
	require.Equal(t, E4M3NaN, F32ToE4M3(nan))
	require.Equal(t, uint8(0xff), F32ToE4M3(-nan))
	require.Equal(t, uint8(0x7e), F32ToE4M3(float32(math.Inf(1))), "saturating: +Inf gives 448")
	require.Equal(t, uint8(0xfe), F32ToE4M3(float32(math.Inf(-1))))
	require.Equal(t, uint8(0x80), F32ToE4M3(float32(math.Copysign(0, -1))))
	require.Equal(t, uint8(0x00), F32ToE4M3(0x1p-11), "2^-11 ties between 0 and 2^-9: to 0 (even)")
	require.Equal(t, uint8(0x02), F32ToE4M3(3*0x1p-10), "1.5·2^-9 ties to 2·2^-9 (even)")
}
