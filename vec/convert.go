package vec

import "github.com/tpslice/tpslice/dtype"

// Widen converts 16-bit elements of dtype t (BF16 or F16) to f32:
//
//	for i := range dst { dst[i] = dtype.ToF32(t, src[i]) }
//
// src must be at least len(dst) long. On amd64 with AVX2 and F16C it runs VPMOVZXWD+VPSLLD
// (bf16) or VCVTPH2PS (f16), bitwise identical to the loop.
func Widen(t dtype.DType, dst []float32, src []uint16) {
	widen(t, dst, src[:len(dst)])
}

// Narrow converts f32 elements to dtype t (BF16 or F16), rounding to nearest even:
//
//	for i := range dst { dst[i] = dtype.FromF32(t, src[i]) }
//
// src must be at least len(dst) long. On amd64 with AVX2 and F16C it runs the integer
// rounding of dtype.F32ToBF16 eight lanes at a time (bf16) or VCVTPS2PH with round to
// nearest even (f16), bitwise identical to the loop, NaNs included.
func Narrow(t dtype.DType, dst []uint16, src []float32) {
	narrow(t, dst, src[:len(dst)])
}
