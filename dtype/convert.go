package dtype

import (
	"math"

	"github.com/x448/float16"
)

// BF16ToF32 widens a bfloat16 bit pattern to float32 (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 narrows a float32 to bfloat16 bits, rounding to nearest even; NaN stays NaN.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep the sign, force a quiet mantissa bit
		return uint16(u>>16) | 0x0040
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// F16ToF32 widens an IEEE half-precision bit pattern to float32 (exact).
func F16ToF32(h uint16) float32 { return float16.Frombits(h).Float32() }

// F32ToF16 narrows a float32 to IEEE half-precision bits, rounding to nearest even.
func F32ToF16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// ToF32 widens one element of a 16-bit dtype to float32.
func ToF32(t DType, h uint16) float32 {
	if t == F16 {
		return F16ToF32(h)
	}
	return BF16ToF32(h)
}

// FromF32 narrows a float32 to one element of a 16-bit dtype.
func FromF32(t DType, f float32) uint16 {
	if t == F16 {
		return F32ToF16(f)
	}
	return F32ToBF16(f)
}
