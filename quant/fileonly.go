package quant

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// ComputeType is the type that weights stored as t are held in on a device, with the same
// values: t itself where the kernels take t. For the file-only types (dtype.FileOnly):
//   - Q5_0 → Q8_0: the same blocks of 32 and f16 scale, each value's q−16 (−16..15) an
//     int8 (Q5_0AsQ8_0); 1.55× the bytes.
//   - Q5_1 → Q5_1x8: d·q + m has no Q8_0 form (the min), so the same blocks keep their
//     scale and min and take a byte a value (Q5_1AsQ5_1x8); 1.5× the bytes, where f32
//     would take 5.3×.
func ComputeType(t dtype.DType) dtype.DType {
	switch t {
	case dtype.Q5_0:
		return dtype.Q8_0
	case dtype.Q5_1:
		return dtype.Q5_1x8
	}
	return t
}

// Q5_0AsQ8_0 rewrites the Q5_0 blocks of src as the Q8_0 blocks of dst that hold the same
// values, block for block:
//
//	dst.d = src.d (the f16 bits), dst.qs[j] = int8(q_j − 16)
//
// so that Dequantize gives the same f32 values bit for bit (q·d with the same q and d).
func Q5_0AsQ8_0(dst, src []byte) error {
	n := len(src) / dtype.Q5_0.BlockBytes()
	if len(src)%dtype.Q5_0.BlockBytes() != 0 || len(dst) != n*dtype.Q8_0.BlockBytes() {
		return fmt.Errorf("quant: q5_0 as q8_0: %d bytes of q5_0 are not whole blocks, or %d bytes of q8_0 do not hold them", len(src), len(dst))
	}
	for b := range n {
		s, d := src[b*dtype.Q5_0.BlockBytes():][:dtype.Q5_0.BlockBytes()], dst[b*dtype.Q8_0.BlockBytes():][:dtype.Q8_0.BlockBytes()]
		copy(d[q80D:q80D+2], s[q50D:q50D+2])
		for j := range 16 {
			lo, hi := fifthBits(s, q50Qh, q50Qs, j)
			d[q80Qs+j], d[q80Qs+j+16] = byte(int8(lo-16)), byte(int8(hi-16))
		}
	}
	return nil
}

// Q5_1AsQ5_1x8 rewrites the Q5_1 blocks of src as the Q5_1x8 blocks of dst that hold the
// same values, block for block:
//
//	dst.d, dst.m = src.d, src.m (the f16 bits), dst.qs[j] = q_j (0..31)
//
// so that Dequantize gives the same f32 values bit for bit.
func Q5_1AsQ5_1x8(dst, src []byte) error {
	sb, db := dtype.Q5_1.BlockBytes(), dtype.Q5_1x8.BlockBytes()
	n := len(src) / sb
	if len(src)%sb != 0 || len(dst) != n*db {
		return fmt.Errorf("quant: q5_1 as q5_1x8: %d bytes of q5_1 are not whole blocks, or %d bytes of q5_1x8 do not hold them", len(src), len(dst))
	}
	for b := range n {
		s, d := src[b*sb:][:sb], dst[b*db:][:db]
		copy(d[q518D:q518D+2], s[q51D:q51D+2])
		copy(d[q518M:q518M+2], s[q51M:q51M+2])
		for j := range 16 {
			lo, hi := fifthBits(s, q51Qh, q51Qs, j)
			d[q518Qs+j], d[q518Qs+j+16] = byte(lo), byte(hi)
		}
	}
	return nil
}
