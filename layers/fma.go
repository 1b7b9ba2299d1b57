package layers

import "math"

// fma32 is a·b + c rounded once to the nearest float32 (ties to even): the float32 fused
// multiply-add of IEEE 754, which VFMADD231PS computes lane by lane. Go has none, and
// float32(math.FMA(a, b, c)) rounds twice, first to float64 and then to float32, which can
// land on the wrong side of a float32 tie.
//
// The product of two float32 is exact in float64 (24+24 significant bits ≤ 53); the sum s
// of it and c is rounded, but TwoSum gives its exact error e, and moving s to its odd
// neighbour toward e when it is even and inexact (round to odd) keeps the information a
// tie needs: a value rounded to odd at 53 bits and then to nearest at 24 is the value
// rounded to nearest at 24 once, since 53 ≥ 24+2 (Boldo and Melquiond, 2008). That holds
// for subnormal float32 results too, whose quantum 2⁻¹⁴⁹ is far above float64's there.
// NaNs, infinities and signed zeros come out of the float64 arithmetic as the fused
// operation's: the product neither overflows nor underflows in float64.
func fma32(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b)) // exact; the conversion forbids fusing it with +
	cc := float64(c)
	s := p + cc
	if math.IsInf(s, 0) || s != s {
		return float32(s)
	}
	// TwoSum (Knuth): s + e = p + cc exactly.
	bv := s - p
	e := (p - (s - bv)) + (cc - bv)
	if bits := math.Float64bits(s); e != 0 && bits&1 == 0 {
		if (e > 0) == (s > 0) {
			bits++ // away from zero: s's magnitude grows
		} else {
			bits--
		}
		s = math.Float64frombits(bits)
	}
	return float32(s)
}
