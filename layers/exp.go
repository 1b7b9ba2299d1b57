package layers

import "math"

// expf returns e^x in f32, computed the same way on every machine (math.Exp on amd64
// takes an FMA path where the CPU has one, so its results can differ between machines):
// Cephes' expf, with every operation rounded to f32 and no fused multiply-add.
//
//	n := floor(x·log2(e) + 1/2)
//	r := (x − n·c1) − n·c2               // c1 + c2 = ln 2, c1 exact in 9 bits
//	y := p(r)·r² + r + 1                 // p: Cephes' degree-5 polynomial
//	return y · 2^⌊n/2⌋ · 2^(n−⌊n/2⌋)     // one rounding, also for subnormal results
//
// It is within 2 f32 ulps of e^x rounded (TestExpfAccuracy), 0 below −103.97 (e^x <
// 2^−150), +Inf above 88.72283, NaN for NaN.
func expf(x float32) float32 {
	const (
		hi    = 88.72283
		lo    = -103.97208
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	switch {
	case x != x:
		return x
	case x > hi:
		return float32(math.Inf(1))
	case x < lo:
		return 0
	}
	z := float32(x*log2e) + 0.5
	n := int32(z) // truncates toward zero; make it floor
	if float32(n) > z {
		n--
	}
	fn := float32(n)
	r := x - float32(fn*c1)
	r -= float32(fn * c2)
	y := float32(1.9875691500e-4)
	y = float32(y*r) + 1.3981999507e-3
	y = float32(y*r) + 8.3334519073e-3
	y = float32(y*r) + 4.1665795894e-2
	y = float32(y*r) + 1.6666665459e-1
	y = float32(y*r) + 5.0000001201e-1
	y = float32(y*float32(r*r)) + r + 1
	n1 := n >> 1
	return y * pow2(n1) * pow2(n-n1)
}

// pow2 returns 2^k for k in [−126, 127].
func pow2(k int32) float32 { return math.Float32frombits(uint32(k+127) << 23) }

// silu returns x·sigmoid(x) = x / (1 + e^−x), with expf.
func silu(x float32) float32 { return x / (1 + expf(-x)) }
