package dtype

import "math"

// E4M3 is OCP FP8 E4M3 ("e4m3fn"): 1 sign bit, 4 exponent bits (bias 7), 3 mantissa bits;
// no infinities, S.1111.111 is NaN, so the largest finite value is S.1111.110 = ±448.
// Exponent field 0 holds the subnormals m/8 · 2^-6 (the smallest is 2^-9). It is a wire
// format (comm's low-precision all-reduce), not a dtype of device memory.
const (
	// E4M3Max is the largest finite e4m3 value.
	E4M3Max = 448
	// E4M3NaN is the positive NaN code (0xff is the negative one).
	E4M3NaN     uint8 = 0x7f
	e4m3MaxCode       = 0x7e
)

// E4M3ToF32 widens an e4m3 code to float32 (exact): NaN codes give a NaN of the code's sign.
func E4M3ToF32(c uint8) float32 {
	sign := uint32(c&0x80) << 24
	e, m := uint32(c>>3)&0xf, uint32(c&7)
	switch {
	case e == 0xf && m == 7:
		return math.Float32frombits(sign | 0x7fc00000)
	case e == 0: // subnormal: m · 2^-9, exact in f32
		return math.Float32frombits(sign | math.Float32bits(float32(m)*0x1p-9))
	}
	return math.Float32frombits(sign | (e+120)<<23 | m<<20) // rebias 7 → 127
}

// F32ToE4M3 narrows a float32 to an e4m3 code, rounding to nearest even and saturating:
// magnitudes that round beyond 448 (infinities included) give ±448; NaN gives the NaN code
// of its sign; ±0 keeps its sign.
func F32ToE4M3(f float32) uint8 {
	u := math.Float32bits(f)
	sign := uint8(u>>24) & 0x80
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000:
		return sign | E4M3NaN
	case a >= 0x43e00000: // |f| ≥ 448: saturate
		return sign | e4m3MaxCode
	case a >= 0x3c800000: // |f| ≥ 2^-6: a normal code; keep 3 of the 23 mantissa bits, RNE
		a += 0x7ffff + (a>>20)&1 // a carry into the exponent is the right rounding too
		return sign | uint8(a>>20-120<<3)
	}
	// subnormal or zero: the nearest multiple k of 2^-9 (k = 8 is the smallest normal,
	// whose code is 8 as well); scaling by 2^9 is exact
	k := math.RoundToEven(float64(math.Float32frombits(a)) * 0x1p9)
	return sign | uint8(k)
}
