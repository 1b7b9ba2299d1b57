package layers

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// exactFMA32 is a·b + c rounded once to float32, computed exactly with math/big: the
// oracle of fma32. Where the float64 arithmetic is exact or the operation is special (a
// zero or non-finite operand or product), that arithmetic rounded once to float32 is the
// answer, signed zeros and NaNs included; otherwise the exact sum (at most about 600
// significant bits for float32 operands) is rounded to nearest even by big.Float.
func exactFMA32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	if p == 0 || c == 0 || math.IsInf(p, 0) || math.IsNaN(p) || math.IsInf(float64(c), 0) || math.IsNaN(float64(c)) {
		return float32(p + float64(c))
	}
	const prec = 1100
	x := new(big.Float).SetPrec(prec).SetFloat64(float64(a))
	y := new(big.Float).SetPrec(prec).SetFloat64(float64(b))
	z := new(big.Float).SetPrec(prec).SetFloat64(float64(c))
	sum := new(big.Float).SetPrec(prec).Mul(x, y)
	sum.Add(sum, z)
	f, _ := sum.Float32() // nearest, ties to even; subnormals rounded at 2⁻¹⁴⁹
	return f
}

// fmaTies are fused multiply-adds whose exact value lies just off a float32 tie, by less
// than half a float64 ulp: float64 rounds them onto the tie, and a second rounding to
// float32 then goes to the even side, the wrong one for half of them. a = 1+2⁻²³ and
// b = h·(1±2⁻²³) give a·b = h·(1±2⁻⁴⁶) (plus h·2⁻²² for +), with h half an ulp of c.
func fmaTies() [][3]float32 {
	var cases [][3]float32
	up := float32(1 + 0x1p-23)
	for _, c := range []float32{1, 1 + 0x1p-23, 1.5, -1 - 0x1p-23, 3 * 0x1p-140, 0x1p-126, math.MaxFloat32 / 2} {
		bits := math.Float32bits(c) &^ (1 << 31)
		h := math.Float32frombits(bits+1) - math.Float32frombits(bits) // ulp of |c|
		h /= 2
		if c < 0 {
			h = -h
		}
		for _, b := range []float32{h * (1 - 0x1p-23), h * (1 + 0x1p-23), -h * (1 - 0x1p-23), -h * (1 + 0x1p-23)} {
			cases = append(cases, [3]float32{up, b, c}, [3]float32{b, up, c})
		}
	}
	return cases
}

// fmaSpecials are operands mixed into the table test: zeros of both signs, infinities,
// NaNs, the subnormal and normal extremes and ones.
var fmaSpecials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
	math.Float32frombits(0x7fc00000), math.Float32frombits(1), math.Float32frombits(0x807fffff),
	math.Float32frombits(0x00800000), math.MaxFloat32, -math.MaxFloat32, 0x1p-75, 0x1p64,
}

func requireFMA32(t *testing.T, a, b, c float32) {
	t.Helper()
	want, got := exactFMA32(a, b, c), fma32(a, b, c)
	if math.IsNaN(float64(want)) && math.IsNaN(float64(got)) {
		return
	}
	require.Equalf(t, math.Float32bits(want), math.Float32bits(got),
		"fma32(%#08x, %#08x, %#08x) = %v, want %v", math.Float32bits(a), math.Float32bits(b), math.Float32bits(c), got, want)
}

// TestFMA32 checks fma32 against the exact oracle on ties, on every combination of the
// special operands, and on random operands of every exponent (bit patterns) and of
// cancelling magnitudes (c ≈ −a·b).
func TestFMA32(t *testing.T) {
	ties := fmaTies()
	doubles := 0 // ties that float64 then float32 rounds wrongly: the cases must have some
	for _, abc := range ties {
		requireFMA32(t, abc[0], abc[1], abc[2])
		if float32(math.FMA(float64(abc[0]), float64(abc[1]), float64(abc[2]))) != exactFMA32(abc[0], abc[1], abc[2]) {
			doubles++
		}
	}
	require.Positive(t, doubles, "no tie case trips double rounding: the tie cases test nothing")
	for _, a := range fmaSpecials {
		for _, b := range fmaSpecials {
			for _, c := range fmaSpecials {
				requireFMA32(t, a, b, c)
			}
		}
	}
	r := rand.New(rand.NewPCG(28, 1))
	for range 200000 {
		a, b := math.Float32frombits(r.Uint32()), math.Float32frombits(r.Uint32())
		c := math.Float32frombits(r.Uint32())
		requireFMA32(t, a, b, c)
		x, w := r.Float32()*2-1, r.Float32()*2-1
		requireFMA32(t, x, w, -float32(x*w)*(1+float32(r.IntN(5)-2)*0x1p-23))
	}
}

// FuzzFMA32 checks fma32 against the exact oracle on any three bit patterns.
func FuzzFMA32(f *testing.F) {
	for _, abc := range fmaTies() {
		f.Add(math.Float32bits(abc[0]), math.Float32bits(abc[1]), math.Float32bits(abc[2]))
	}
	f.Add(uint32(1), uint32(0x3f800000), uint32(0x80000001))
	f.Fuzz(func(t *testing.T, a, b, c uint32) {
		requireFMA32(t, math.Float32frombits(a), math.Float32frombits(b), math.Float32frombits(c))
	})
}
