package dtype

import (
	"fmt"
	"slices"
	"strings"
)

// DType is the type of the values in device memory: an element type (f32, bf16, f16), or a
// block type of GGML's (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q5_0, Q5_1), whose values come in
// blocks of BlockSize that share scales and occupy BlockBytes together, so that no single
// value has a size of its own (ggml's type_traits: blck_size, type_size).
type DType uint8

// The types. BF16 and F16 are stored as 16-bit words and converted exactly: widening to f32
// is exact, narrowing rounds to nearest even. The block types are laid out as llama.cpp's
// ggml-common.h defines them; package quant encodes and decodes them.
const (
	F32 DType = iota + 1
	BF16
	F16
	// Q8_0: 32 values in 34 bytes, an f16 scale and 32 int8.
	Q8_0
	// Q4_0: 32 values in 18 bytes, an f16 scale and 32 4-bit values offset by 8.
	Q4_0
	// Q4_K: 256 values in 144 bytes, f16 scale and min, 8 sub-blocks of 32 with 6-bit
	// scales and mins, 4-bit values.
	Q4_K
	// Q5_K: Q4_K with a fifth bit per value, 256 values in 176 bytes.
	Q5_K
	// Q6_K: 256 values in 210 bytes, an f16 scale, 16 sub-blocks of 16 with int8 scales,
	// 6-bit values offset by 32.
	Q6_K
	// Q5_0: 32 values in 22 bytes, an f16 scale and 32 5-bit values offset by 16.
	Q5_0
	// Q5_1: 32 values in 24 bytes, an f16 scale and min and 32 5-bit values.
	Q5_1
)

type traits struct {
	name             string
	blockSize, bytes int
	aliases          []string
}

// table holds the traits of every type, indexed by DType; it is never written.
var table = [...]traits{
	F32:  {name: "f32", blockSize: 1, bytes: 4, aliases: []string{"float32", "float"}},
	BF16: {name: "bf16", blockSize: 1, bytes: 2, aliases: []string{"bfloat16"}},
	F16:  {name: "f16", blockSize: 1, bytes: 2, aliases: []string{"float16", "half"}},
	Q8_0: {name: "q8_0", blockSize: 32, bytes: 34},
	Q4_0: {name: "q4_0", blockSize: 32, bytes: 18},
	Q4_K: {name: "q4_k", blockSize: 256, bytes: 144},
	Q5_K: {name: "q5_k", blockSize: 256, bytes: 176},
	Q6_K: {name: "q6_k", blockSize: 256, bytes: 210},
	Q5_0: {name: "q5_0", blockSize: 32, bytes: 22},
	Q5_1: {name: "q5_1", blockSize: 32, bytes: 24},
}

func (t DType) traits() traits {
	if int(t) < len(table) {
		return table[t]
	}
	return traits{}
}

// Valid reports whether t is one of the defined types.
func (t DType) Valid() bool { return t.traits().blockSize != 0 }

// Scalar reports whether t is an element type (f32, bf16, f16): one value, one size. Only
// these hold activations, KV caches and collective buffers.
func (t DType) Scalar() bool { return t.traits().blockSize == 1 }

// Quantized reports whether t is a block type.
func (t DType) Quantized() bool { return t.traits().blockSize > 1 }

// Size is the number of bytes one element of an element type occupies; 0 for block types,
// whose values have no size of their own (see BlockBytes).
func (t DType) Size() int {
	if !t.Scalar() {
		return 0
	}
	return t.traits().bytes
}

// BlockSize is the number of values in one block: 1 for element types, 32 or 256 for the
// block types; 0 for an invalid type.
func (t DType) BlockSize() int { return t.traits().blockSize }

// BlockBytes is the size of one block in bytes (of one element, for element types).
func (t DType) BlockBytes() int { return t.traits().bytes }

// Whole reports whether n values are a whole number of blocks of t.
func (t DType) Whole(n int) bool { return t.Valid() && n >= 0 && n%t.BlockSize() == 0 }

// Bytes is the size of n consecutive values of t, a whole number of blocks (see Whole).
func (t DType) Bytes(n int) int {
	if !t.Valid() {
		return 0
	}
	return n / t.BlockSize() * t.BlockBytes()
}

// BitsPerWeight is the storage per value, scales included: 32 for f32, 4.5 for Q4_0.
func (t DType) BitsPerWeight() float64 {
	if !t.Valid() {
		return 0
	}
	return 8 * float64(t.BlockBytes()) / float64(t.BlockSize())
}

// CheckRow reports whether a row of n values can be stored in t: n positive and a whole
// number of blocks. The error names the type, its block size and n.
func (t DType) CheckRow(n int) error {
	switch {
	case !t.Valid():
		return fmt.Errorf("invalid dtype %v", t)
	case n <= 0:
		return fmt.Errorf("%v row of %d values: must be positive", t, n)
	case !t.Whole(n):
		return fmt.Errorf("%v row of %d values: not a whole number of %d-value blocks", t, n, t.BlockSize())
	}
	return nil
}

// String returns the name used on command lines and in reports ("f32", "bf16", "q4_k").
func (t DType) String() string {
	if t.Valid() {
		return t.traits().name
	}
	return fmt.Sprintf("dtype(%d)", uint8(t))
}

// Parse reads a type name as String writes it, case-insensitively (also "float32",
// "bfloat16", "float16", "half").
func Parse(s string) (DType, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for t, tr := range table {
		if tr.blockSize != 0 && (name == tr.name || slices.Contains(tr.aliases, name)) {
			return DType(t), nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q (want %s)", s, Names(DType.Valid))
}

// Names lists, in table order, the names of the types keep reports ("f32, bf16 or f16" for
// DType.Scalar), for help texts and errors.
func Names(keep func(DType) bool) string {
	var names []string
	for t := range table {
		if keep(DType(t)) {
			names = append(names, table[t].name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseScalar is Parse restricted to element types, for what must hold one value per
// element (a KV cache, a collective's buffers).
func ParseScalar(s string) (DType, error) {
	t, err := Parse(s)
	if err == nil && !t.Scalar() {
		return 0, fmt.Errorf("dtype %q is a block type; want f32, bf16 or f16", s)
	}
	if err != nil {
		return 0, fmt.Errorf("unknown dtype %q (want f32, bf16 or f16)", s)
	}
	return t, nil
}
