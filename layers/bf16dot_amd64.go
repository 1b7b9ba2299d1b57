//go:build amd64 && !noasm

package layers

// The AVX512_BF16 instructions one register at a time (bf16dot_amd64.s), for the tests that
// pin dpbf16 and roundBF16 to the hardware; they run only where vec.AcceleratedBF16Dot.

// vdpbf16ps16 runs VDPBF16PS on one ZMM register: lane l of acc continued by the products
// of the bf16 pairs x[2l], x[2l+1] and w[2l], w[2l+1].
//
//go:noescape
func vdpbf16ps16(acc *[16]float32, x, w *[32]uint16)

// vcvtneps2bf16x16 runs VCVTNEPS2BF16 on one ZMM register: the 16 floats of f rounded to bf16.
//
//go:noescape
func vcvtneps2bf16x16(dst *[16]uint16, f *[16]float32)
