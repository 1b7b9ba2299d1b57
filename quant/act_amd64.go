//go:build amd64 && !noasm

package quant

import "github.com/tpslice/tpslice/vec"

// The AVX-512 kernels of QuantizeActs for a whole row (act_avx512_amd64.s): row's values
// at x, nb blocks, written to dst as the format lays a row out.

//go:noescape
func quantActs32AVX512(dst *byte, x *float32, nb int)

//go:noescape
func quantActs256AVX512(dst *byte, x *float32, nb int)

// quantRowAsm quantizes one whole row (no padding) with the assembly where the CPU runs
// it, and reports whether it did.
func quantRowAsm(a Acts, dst []byte, x []float32) bool {
	if !vec.AcceleratedAVX512() || len(x) == 0 {
		return false
	}
	nb := len(x) / a.Block()
	_ = dst[a.RowBytes(len(x))-1]
	if a == Acts16x256 {
		quantActs256AVX512(&dst[0], &x[0], nb)
	} else {
		quantActs32AVX512(&dst[0], &x[0], nb)
	}
	return true
}
