package dtype

import (
	"fmt"
	"strings"
)

// DType is the element type of a device buffer.
type DType uint8

// The element types a device buffer can hold. BF16 and F16 are stored as 16-bit words and
// converted exactly: widening to f32 is exact, narrowing rounds to nearest even.
const (
	F32 DType = iota + 1
	BF16
	F16
)

// Size is the number of bytes one element occupies.
func (t DType) Size() int {
	switch t {
	case F32:
		return 4
	case BF16, F16:
		return 2
	}
	return 0
}

// String returns the name used on command lines and in reports ("f32", "bf16", "f16").
func (t DType) String() string {
	switch t {
	case F32:
		return "f32"
	case BF16:
		return "bf16"
	case F16:
		return "f16"
	}
	return fmt.Sprintf("dtype(%d)", uint8(t))
}

// Valid reports whether t is one of the defined element types.
func (t DType) Valid() bool { return t.Size() != 0 }

// Parse reads a dtype name as String writes it (also "float32", "bfloat16", "float16").
func Parse(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "f32", "float32", "float":
		return F32, nil
	case "bf16", "bfloat16":
		return BF16, nil
	case "f16", "float16", "half":
		return F16, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (want f32, bf16 or f16)", s)
}
