package quant

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// A matrix's rows on a device: Q4_0 and Q4_K interleave groups of rows (group.go); Q8_0
// rows split into two arrays, every block's values (qs, in pairLayout's order) and then
// every block's f16 scale; Q5_K and Q6_K keep GGML's blocks, whose super-blocks already
// hold their values contiguously. A matrix's size is t.Bytes per row, its rows rounded up
// to a whole group where t groups them (PackedBytes).
//
//	row of nb Q8_0 blocks: qs[32·nb] int8 in pairLayout's order, d[nb] f16

// pairLayout orders the values of a row of 32-value blocks two blocks at a time: blocks 2k
// and 2k+1 take positions 64k.. as values 0-15 of 2k, 0-15 of 2k+1, 16-31 of 2k, 16-31 of
// 2k+1; a last block without a partner keeps its 32 values in order. One 32-byte load of
// Q8_0 weights then meets 16 activations of each block, whose words Acts16x32 orders the
// same way.
func pairLayout(b, i, nb int) int {
	if b == nb-1 && nb%2 == 1 {
		return 32*b + i
	}
	return 64*(b/2) + 32*(i/16) + 16*(b%2) + i%16
}

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
	if !packed(t) { // the same layout
		if pack {
			copy(dev, ggml)
		} else {
			copy(ggml, dev)
		}
		return nil
	}
	if pack {
		clear(dev) // nibbles are ORed in; a last group's missing rows stay zero
	}
	nb, rb, bb := cols/t.BlockSize(), t.Bytes(cols), t.BlockBytes()
	for r := range rows {
		for b := range nb {
			g := ggml[r*rb+b*bb:][:bb]
			switch c, ok := groupCodecs[t]; {
			case !pack:
				unpackBlock(t, g, dev, r, b, nb)
			case ok:
				c.pack(groupBlock(t, dev, r, b, nb), r%GroupRows, g)
			default:
				packQ8_0Block(dev[r*rb:][:rb], b, nb, g)
			}
		}
	}
	return nil
}

// unpackBlock writes block b of row r of a device matrix of nb blocks a row into g, in
// GGML's layout.
func unpackBlock(t dtype.DType, g, dev []byte, r, b, nb int) {
	if c, ok := groupCodecs[t]; ok {
		c.unpack(g, groupBlock(t, dev, r, b, nb), r%GroupRows)
		return
	}
	rb := t.Bytes(32 * nb)
	unpackQ8_0Block(g, dev[r*rb:][:rb], b, nb)
}

// packQ8_0Block puts the GGML block g as block b of a row of nb blocks.
func packQ8_0Block(row []byte, b, nb int, g []byte) {
	for i := range 32 {
		row[pairLayout(b, i, nb)] = g[2+i]
	}
	copy(row[32*nb+2*b:], g[:2])
}

// unpackQ8_0Block is packQ8_0Block's inverse.
func unpackQ8_0Block(g, row []byte, b, nb int) {
	for i := range 32 {
		g[2+i] = row[pairLayout(b, i, nb)]
	}
	copy(g[:2], row[32*nb+2*b:])
}

// packed reports whether t's device layout differs from GGML's.
func packed(t dtype.DType) bool { return t == dtype.Q8_0 || grouped(t) }

// DequantizeRow converts row r of a device matrix of rows rows (as Pack leaves it) into
// len(dst) f32 values, with Dequantize's arithmetic. It does not allocate.
func DequantizeRow(t dtype.DType, dst []float32, data []byte, rows, r int) error {
	cols := len(dst)
	if err := t.CheckRow(cols); err != nil || !t.Quantized() {
		return fmt.Errorf("quant: dequantize a row of %d %v values: not whole blocks of a block type", cols, t)
	}
	if len(data) != PackedBytes(t, rows, cols) || r < 0 || r >= rows {
		return fmt.Errorf("quant: dequantize row %d of %d rows of %d %v values from %d bytes: want %d", r, rows, cols, t, len(data), PackedBytes(t, rows, cols))
	}
	if !packed(t) {
		rb := t.Bytes(cols)
		return Dequantize(t, dst, data[r*rb:(r+1)*rb])
	}
	bs, bb := t.BlockSize(), t.BlockBytes()
	var block [256]byte // one block in GGML's layout
	for b := range cols / bs {
		unpackBlock(t, block[:bb], data, r, b, cols/bs)
		blockDequantizers[t](dst[bs*b:bs*(b+1)], block[:bb])
	}
	return nil
}
