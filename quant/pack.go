package quant

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// A matrix's rows on a device keep GGML's blocks for the K-quants, whose super-blocks
// already hold their values contiguously, and split the 32-value blocks of Q8_0 and Q4_0
// into two arrays per row, every block's values (qs) first and then every block's f16
// scale (d), as llama.cpp's repacked CPU layouts also do: the dot-product kernels then load
// a run of blocks' values or of scales with one vector load each. A row's size is the same
// either way (t.Bytes(cols)).
//
//	row of nb Q4_0 blocks: qs[16·nb] (block b's 16 bytes of nibbles at 16b), d[nb] f16
//	row of nb Q8_0 blocks: qs[32·nb] int8 in pairLayout's order, d[nb] f16
//
// pairLayout orders the values of a row of 32-value blocks two blocks at a time: blocks 2k
// and 2k+1 take positions 64k.. as values 0-15 of 2k, 0-15 of 2k+1, 16-31 of 2k, 16-31 of
// 2k+1; a last block without a partner keeps its 32 values in order. One 32-byte load of
// Q8_0 weights (or the low or high nibbles of 32 bytes of Q4_0, which hold values 0-15 and
// 16-31 of two blocks) then meets 16 activations of each block, whose words Acts16x32
// orders the same way.
func pairLayout(b, i, nb int) int {
	if b == nb-1 && nb%2 == 1 {
		return 32*b + i
	}
	return 64*(b/2) + 32*(i/16) + 16*(b%2) + i%16
}

// packed reports whether t's device rows differ from its GGML rows.
func packed(t dtype.DType) bool { return t == dtype.Q8_0 || t == dtype.Q4_0 }

// qsBytes is the size of one 32-value block's values (Q8_0: 32, Q4_0: 16).
func qsBytes(t dtype.DType) int { return t.BlockBytes() - 2 }

// Pack converts rows of GGML blocks (src, rows of cols values of t) into the device layout
// (dst, the same size). dst and src must not overlap.
func Pack(t dtype.DType, dst, src []byte, cols int) error {
	return repack(t, dst, src, cols, true)
}

// Unpack converts device rows back into GGML blocks, Pack's inverse.
func Unpack(t dtype.DType, dst, src []byte, cols int) error {
	return repack(t, dst, src, cols, false)
}

func repack(t dtype.DType, dst, src []byte, cols int, pack bool) error {
	if _, err := checkRows(t, cols, src); err != nil {
		return err
	}
	if len(dst) != len(src) {
		return fmt.Errorf("quant: repack %v rows: %d bytes into %d", t, len(src), len(dst))
	}
	if !packed(t) {
		copy(dst, src)
		return nil
	}
	nb, rb, qb := cols/t.BlockSize(), t.Bytes(cols), qsBytes(t)
	for r := 0; r < len(src); r += rb {
		s, d := src[r:r+rb], dst[r:r+rb]
		for b := range nb {
			ggml, sc := b*t.BlockBytes(), qb*nb+2*b
			for i := range qb {
				dev := qb*b + i // Q4_0: byte i of block b
				if t == dtype.Q8_0 {
					dev = pairLayout(b, i, nb)
				}
				if pack {
					d[dev] = s[ggml+2+i]
				} else {
					d[ggml+2+i] = s[dev]
				}
			}
			if pack {
				copy(d[sc:sc+2], s[ggml:ggml+2])
			} else {
				copy(d[ggml:ggml+2], s[sc:sc+2])
			}
		}
	}
	return nil
}

// DequantizeRow converts one device row of t (as Pack leaves it) into len(dst) f32 values,
// with Dequantize's arithmetic. It does not allocate.
func DequantizeRow(t dtype.DType, dst []float32, row []byte) error {
	if !packed(t) {
		return Dequantize(t, dst, row)
	}
	if !t.Whole(len(dst)) || len(row) != t.Bytes(len(dst)) {
		return fmt.Errorf("quant: dequantize a row of %d %v values from %d bytes: want %d", len(dst), t, len(row), t.Bytes(len(dst)))
	}
	nb, qb := len(dst)/32, qsBytes(t)
	var block [34]byte // one block in GGML's layout
	for b := range nb {
		copy(block[:2], row[qb*nb+2*b:])
		for i := range qb {
			dev := qb*b + i
			if t == dtype.Q8_0 {
				dev = pairLayout(b, i, nb)
			}
			block[2+i] = row[dev]
		}
		blockDequantizers[t](dst[32*b:32*(b+1)], block[:2+qb])
	}
	return nil
}
