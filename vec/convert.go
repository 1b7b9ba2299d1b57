package vec

import "github.com/tpslice/tpslice/dtype"

// Widen converts 16-bit elements of dtype t (BF16 or F16) to f32:
//
//	for i := range dst { dst[i] = dtype.ToF32(t, src[i]) }
//
// src must be at least len(dst) long.
func Widen(t dtype.DType, dst []float32, src []uint16) {
	src = src[:len(dst)]
	if t == dtype.BF16 {
		for i, h := range src {
			dst[i] = dtype.BF16ToF32(h)
		}
		return
	}
	for i, h := range src {
		dst[i] = dtype.F16ToF32(h)
	}
}

// Narrow converts f32 elements to dtype t (BF16 or F16), rounding to nearest even:
//
//	for i := range dst { dst[i] = dtype.FromF32(t, src[i]) }
//
// src must be at least len(dst) long.
func Narrow(t dtype.DType, dst []uint16, src []float32) {
	src = src[:len(dst)]
	if t == dtype.BF16 {
		for i, f := range src {
			dst[i] = dtype.F32ToBF16(f)
		}
		return
	}
	for i, f := range src {
		dst[i] = dtype.F32ToF16(f)
	}
}
