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

// fmaAcc continues the eight partial sums of a linear layer's output (LinearRows' order)
// with the products of x and w, each fused into its lane's sum:
//
//	for i := range x { acc[i%8] = fma32(x[i], w[i], acc[i%8]) }
//
// It is called tile by tile along a row, with every tile but the last a multiple of Lanes
// long, so that lane i%8 of a tile is lane i%8 of the row. len(w) ≥ len(x).
func fmaAcc(acc *[Lanes]float32, x, w []float32) {
	w = w[:len(x)]
	a0, a1, a2, a3 := acc[0], acc[1], acc[2], acc[3]
	a4, a5, a6, a7 := acc[4], acc[5], acc[6], acc[7]
	n := len(x) &^ (Lanes - 1)
	for i := 0; i < n; i += Lanes {
		xs := (*[Lanes]float32)(x[i : i+Lanes])
		ws := (*[Lanes]float32)(w[i : i+Lanes])
		a0 = fma32(xs[0], ws[0], a0)
		a1 = fma32(xs[1], ws[1], a1)
		a2 = fma32(xs[2], ws[2], a2)
		a3 = fma32(xs[3], ws[3], a3)
		a4 = fma32(xs[4], ws[4], a4)
		a5 = fma32(xs[5], ws[5], a5)
		a6 = fma32(xs[6], ws[6], a6)
		a7 = fma32(xs[7], ws[7], a7)
	}
	acc[0], acc[1], acc[2], acc[3] = a0, a1, a2, a3
	acc[4], acc[5], acc[6], acc[7] = a4, a5, a6, a7
	for i := n; i < len(x); i++ {
		acc[i-n] = fma32(x[i], w[i], acc[i-n])
	}
}
