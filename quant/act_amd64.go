//go:build amd64 && !noasm

package quant

import "github.com/tpslice/tpslice/vec"

// The AVX-512 and AVX2 kernels of QuantizeActs for a whole row (act_avx512_amd64.s,
// act_avx2_amd64.s): the row's values at x, nb blocks, written to dst as the format lays a
// row out.

//go:noescape
func quantActs32AVX512(dst *byte, x *float32, nb int)

//go:noescape
func quantActs256AVX512(dst *byte, x *float32, nb int)

//go:noescape
func quantActs32AVX2(dst *byte, x *float32, nb int)

//go:noescape
func quantActs256AVX2(dst *byte, x *float32, nb int)

// quantRowAsm quantizes one whole row (no padding) with the assembly where the CPU runs
// it (AVX-512, else AVX2), and reports whether it did.
func quantRowAsm(a Acts, dst []byte, x []float32) bool {
	return quantRowISA(a, dst, x, vec.AcceleratedAVX512())
}

// quantRowISA is quantRowAsm with the AVX-512 kernels (avx512) or the AVX2 ones.
func quantRowISA(a Acts, dst []byte, x []float32, avx512 bool) bool {
	if !vec.Accelerated() || len(x) == 0 {
		return false
	}
	nb := len(x) / a.Block()
	_ = dst[a.RowBytes(len(x))-1]
	switch {
	case a == Acts16x256 && avx512:
		quantActs256AVX512(&dst[0], &x[0], nb)
	case a == Acts16x256:
		quantActs256AVX2(&dst[0], &x[0], nb)
	case avx512:
		quantActs32AVX512(&dst[0], &x[0], nb)
	default:
		quantActs32AVX2(&dst[0], &x[0], nb)
	}
	return true
}
