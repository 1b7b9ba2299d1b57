package vec

import "math"

// normLanes is how many interleaved partial sums SumSquares keeps: element i goes to
// partial i mod normLanes, and the partials combine in the fixed tree an AVX2 horizontal
// add produces (the one layers' dot products use). The order is part of the contract:
// every caller (fused collectives, layers) gets the same bits for a row.
const normLanes = 8

// SumSquares returns Σ x[i]² in f32 with a fixed order:
//
//	var p [8]float32; for i := range x { p[i%8] += x[i]*x[i] }
//	return ((p[0]+p[4])+(p[2]+p[6])) + ((p[1]+p[5])+(p[3]+p[7]))
func SumSquares(x []float32) float32 {
	var p [normLanes]float32
	addSquares(x, &p)
	return ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]))
}

// addSquaresGo is addSquares in Go: element i of x into p[i mod 8].
func addSquaresGo(x []float32, p *[normLanes]float32) {
	i := 0
	for ; i+normLanes <= len(x); i += normLanes {
		v := x[i : i+normLanes : i+normLanes]
		p[0] += v[0] * v[0]
		p[1] += v[1] * v[1]
		p[2] += v[2] * v[2]
		p[3] += v[3] * v[3]
		p[4] += v[4] * v[4]
		p[5] += v[5] * v[5]
		p[6] += v[6] * v[6]
		p[7] += v[7] * v[7]
	}
	for j := 0; i < len(x); i, j = i+1, j+1 {
		p[j] += x[i] * x[i]
	}
}

// RMSScale returns 1/sqrt(mean(x²) + eps): the mean and eps in f32, the reciprocal square
// root in float64, rounded once to f32, so that it is the same on every machine:
//
//	float32(1 / math.Sqrt(float64(SumSquares(x)/float32(len(x)) + eps)))
func RMSScale(x []float32, eps float32) float32 {
	return float32(1 / math.Sqrt(float64(SumSquares(x)/float32(len(x))+eps)))
}

// RMSNorm writes the RMS-normalized row, scaled by w:
//
//	s := RMSScale(x, eps); for i := range out { out[i] = x[i] * s * w[i] }
//
// out may alias x; x and w must be at least len(out) long.
func RMSNorm(out, x, w []float32, eps float32) {
	x, w = x[:len(out)], w[:len(out)]
	scaleMul(out, x, w, RMSScale(x, eps))
}

// scaleMulGo is scaleMul in Go.
func scaleMulGo(out, x, w []float32, s float32) {
	x, w = x[:len(out)], w[:len(out)]
	for i := range out {
		out[i] = x[i] * s * w[i]
	}
}

// AddRMSNorm adds x into the residual row and writes the normalized sum, as a decoder
// layer does after each block:
//
//	for i := range res { res[i] += x[i] }; RMSNorm(out, res, w, eps)
//
// out may alias x (x is fully consumed before out is written).
func AddRMSNorm(out, res, x, w []float32, eps float32) {
	res = res[:len(out)]
	AddF32(res, x[:len(out)])
	RMSNorm(out, res, w, eps)
}
