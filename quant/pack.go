package quant

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// A matrix's rows on a device: every block type interleaves groups of GroupRows rows
// (group.go), so that a kernel's vector lanes are rows. A matrix's size is t.Bytes per
// row, its rows rounded up to a whole group (PackedBytes).

// Pack converts rows × cols values of GGML blocks (src) into the device layout (dst,
// PackedBytes(t, rows, cols); the rows a group lacks are zeros). dst and src must not
// overlap.
func Pack(t dtype.DType, dst, src []byte, rows, cols int) error {
	return repack(t, dst, src, rows, cols, true)
}

// Unpack converts a device matrix back into rows of GGML blocks, Pack's inverse.
func Unpack(t dtype.DType, dst, src []byte, rows, cols int) error {
	return repack(t, src, dst, rows, cols, false)
}

// repack moves every byte of the GGML rows ggml to its place in the device matrix dev
// (pack) or back.
func repack(t dtype.DType, dev, ggml []byte, rows, cols int, pack bool) error {
	if n, err := checkRows(t, cols, ggml); err != nil {
		return err
	} else if n != rows {
		return fmt.Errorf("quant: repack %d rows of %v: %d bytes hold %d", rows, t, len(ggml), n)
	}
	if len(dev) != PackedBytes(t, rows, cols) {
		return fmt.Errorf("quant: repack %d rows of %d %v values: the device matrix takes %d bytes, have %d", rows, cols, t, PackedBytes(t, rows, cols), len(dev))
	}
	c := groupCodecs[t] // every block type has one (checkRows refused the others)
	if pack {
		clear(dev) // nibbles are ORed in; a last group's missing rows stay zero
	}
	nb, rb, bb := cols/t.BlockSize(), t.Bytes(cols), t.BlockBytes()
	for r := range rows {
		for b := range nb {
			g, blk := ggml[r*rb+b*bb:][:bb], groupBlock(t, dev, r, b, nb)
			if pack {
				c.pack(blk, r%GroupRows, g)
			} else {
				c.unpack(g, blk, r%GroupRows)
			}
		}
	}
	return nil
}

// DequantizeRow converts row r of a device matrix of rows rows (as Pack leaves it) into
// len(dst) f32 values, with Dequantize's arithmetic. It does not allocate.
func DequantizeRow(t dtype.DType, dst []float32, data []byte, rows, r int) error {
	cols := len(dst)
	if err := t.CheckRow(cols); err != nil || !grouped(t) {
		return fmt.Errorf("quant: dequantize a row of %d %v values: not whole blocks of a block type that kernels take", cols, t)
	}
	if len(data) != PackedBytes(t, rows, cols) || r < 0 || r >= rows {
		return fmt.Errorf("quant: dequantize row %d of %d rows of %d %v values from %d bytes: want %d", r, rows, cols, t, len(data), PackedBytes(t, rows, cols))
	}
	c := groupCodecs[t] // every block type has one
	bs, bb := t.BlockSize(), t.BlockBytes()
	var block [256]byte // one block in GGML's layout
	for b := range cols / bs {
		c.unpack(block[:bb], groupBlock(t, data, r, b, cols/bs), r%GroupRows)
		blockDequantizers[t](dst[bs*b:bs*(b+1)], block[:bb])
	}
	return nil
}
