package layers

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// ulpDist is the distance between two f32 values in units in the last place (the number
// of representable values between them), with both zeros equal.
func ulpDist(a, b float32) int64 {
	key := func(f float32) int64 {
		u := int64(math.Float32bits(f))
		if u&(1<<31) != 0 {
			return -(u &^ (1 << 31))
		}
		return u
	}
	d := key(a) - key(b)
	if d < 0 {
		d = -d
	}
	return d
}

// TestExpfAccuracy compares expf with math.Exp rounded to f32 over every f32 in a stride
// through [−110, 90] and at the edges of the range.
func TestExpfAccuracy(t *testing.T) {
	worst, at := int64(0), float32(0)
	check := func(x float32) {
		want := float32(math.Exp(float64(x)))
		got := expf(x)
		if d := ulpDist(got, want); d > worst {
			worst, at = d, x
		}
	}
	lo, hi := math.Float32bits(110), math.Float32bits(90)
	for u := uint32(0); u <= lo; u += 97 { // negatives down to −110
		check(math.Float32frombits(u | 1<<31))
	}
	for u := uint32(0); u <= hi; u += 97 {
		check(math.Float32frombits(u))
	}
	for _, x := range []float32{0, -0, 1, -1, 88.72283, 88.72284, -103.97207, -103.97208, -87.33654, -87.33655, 0.5, -0.5, 0.34657359, -0.34657359} {
		check(x)
	}
	t.Logf("worst error %d ulp at %v (expf %v, exp %v)", worst, at, expf(at), math.Exp(float64(at)))
	require.LessOrEqual(t, worst, int64(2), "worst at x=%v", at)
}

func TestExpfSpecial(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		name string
		x    float32
		want float32
	}{
		{"zero", 0, 1},
		{"+inf", inf, inf},
		{"-inf", -inf, 0},
		{"overflow", 89, inf},
		{"underflow", -104, 0},
		{"largest finite", 88.72283, float32(math.Exp(float64(float32(88.72283))))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, expf(tc.x))
		})
	}
	require.True(t, math.IsNaN(float64(expf(float32(math.NaN())))))
}
