package layers

import "math"

// The bf16 dot product of AVX512_BF16, the arithmetic llama.cpp's bf16 matrix products run:
// activations rounded to bf16, two bf16 products per f32 lane per instruction. Measured on
// this project's CPU (AMD Zen 5) against the instruction itself (TestDPBF16MatchesVDPBF16PS,
// TestRoundBF16MatchesVCVTNEPS2BF16), not taken from the manual alone.

// roundBF16 is VCVTNEPS2BF16 on one lane: f rounded to the nearest bf16, ties to even, with
// a subnormal f read as a zero of its sign (the instruction ignores MXCSR and flushes
// denormal inputs) and a NaN kept NaN with its quiet bit set. It differs from
// dtype.F32ToBF16 only on subnormals, which F32ToBF16 rounds.
func roundBF16(f float32) uint16 {
	return f32ToBF16(flushF32(f))
}

// f32ToBF16 rounds f to the nearest bf16, ties to even; a NaN stays NaN, quiet.
func f32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x0040
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// flushF32 is f with a subnormal replaced by the zero of its sign: the denormals-are-zero
// and flush-to-zero of VDPBF16PS, which ignores MXCSR.
func flushF32(f float32) float32 {
	u := math.Float32bits(f)
	if u&0x7f800000 == 0 {
		return math.Float32frombits(u & 0x80000000)
	}
	return f
}

// dpbf16 is one lane of VDPBF16PS: the partial sum acc continued by the products of the
// bf16 pair (x0, x1) and (w0, w1), the odd element's product fused first, then the even
// one's, each a float32 fused multiply-add rounded to nearest even, with subnormal inputs
// (acc and the four bf16) read as zero and each subnormal result flushed to zero:
//
//	acc = flush(fma32(flush(x1), flush(w1), flush(acc)))
//	acc = flush(fma32(flush(x0), flush(w0), acc))
//
// A product of two bf16 is exact in float32 (8+8 significant bits), so the only roundings
// are the two sums'. The order (odd first) and the flushes are what separate it from the
// other readings of the manual: on 32 M random lanes, the even element first differs on
// 8%, one rounding of both sums on 6%.
func dpbf16(acc float32, x0, x1, w0, w1 uint16) float32 {
	bf := func(h uint16) float32 { return flushF32(math.Float32frombits(uint32(h) << 16)) }
	acc = flushF32(fma32(bf(x1), bf(w1), flushF32(acc)))
	return flushF32(fma32(bf(x0), bf(w0), acc))
}
