package quant

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// A matrix's rows on a device keep GGML's blocks for the K-quants, whose super-blocks
// already hold their values contiguously. Q8_0 rows split into two arrays, every block's
// values (qs, in pairLayout's order) and then every block's f16 scale. Q4_0 interleaves
// groups of GroupRows rows, as llama.cpp's repacked CPU layouts do, so that a kernel's
// vector lanes are rows: one instruction multiplies four values of each of 16 rows with
// the same four activations. A matrix's size is t.Bytes per row, its rows rounded up to a
// whole group where t groups them (PackedBytes).
//
//	row of nb Q8_0 blocks: qs[32·nb] int8 in pairLayout's order, d[nb] f16
//	group of 16 Q4_0 rows, per block b (288 bytes): for each of its 8 quads q (values
//	    4q..4q+3), 32 bytes: byte m holds in its low nibble value 4q+m%4 of row m/4, in its
//	    high nibble that of row 8+m/4; then the 16 rows' scales, 16 f16

// GroupRows is the number of rows a grouped layout interleaves.
const GroupRows = 16

// grouped reports whether t's device layout interleaves groups of rows.
func grouped(t dtype.DType) bool { return t == dtype.Q4_0 }

// RowAlign is the granularity of the row ranges Dot computes for t: GroupRows for the
// grouped types (a range may also end at the matrix's last row), 1 otherwise.
func RowAlign(t dtype.DType) int {
	if grouped(t) {
		return GroupRows
	}
	return 1
}

// PackedRows is the number of rows a device matrix of rows rows of t takes room for: rows
// rounded up to a whole group where t groups them.
func PackedRows(t dtype.DType, rows int) int {
	if grouped(t) {
		return (rows + GroupRows - 1) / GroupRows * GroupRows
	}
	return rows
}

// PackedBytes is the size of a device matrix of rows × cols values of t.
func PackedBytes(t dtype.DType, rows, cols int) int { return PackedRows(t, rows) * t.Bytes(cols) }

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

// q4_0Block is the offset of block b of the group of row r in a grouped Q4_0 matrix of nb
// blocks a row (GroupRows·18 bytes).
func q4_0Block(r, b, nb int) int { return (r/GroupRows*nb + b) * GroupRows * 18 }

// q4_0Nibble locates value i of block b of row r of a grouped Q4_0 matrix of nb blocks a
// row: its byte and whether it is the high nibble.
func q4_0Nibble(r, b, i, nb int) (int, bool) {
	rr := r % GroupRows
	return q4_0Block(r, b, nb) + 32*(i/4) + 4*(rr%8) + i%4, rr >= 8
}

// q4_0Scale locates the f16 scale of block b of row r.
func q4_0Scale(r, b, nb int) int { return q4_0Block(r, b, nb) + 256 + 2*(r%GroupRows) }

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
	nb, rb, bb := cols/32, t.Bytes(cols), t.BlockBytes()
	for r := range rows {
		for b := range nb {
			g := ggml[r*rb+b*bb:][:bb]
			switch {
			case !pack:
				unpackBlock(t, g, dev, r, b, nb)
			case t == dtype.Q4_0:
				packQ4_0Block(dev[q4_0Block(r, b, nb):][:GroupRows*18], r%GroupRows, g)
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
	if t == dtype.Q4_0 {
		unpackQ4_0Block(g, dev[q4_0Block(r, b, nb):][:GroupRows*18], r%GroupRows)
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

// packQ4_0Block ORs the GGML block g into row rr of the group's block blk: GGML byte j
// holds values j and j+16, which land in quads j/4 and 4+j/4 at byte 4·(rr%8) + j%4, in
// the nibble of the row's half of the group.
func packQ4_0Block(blk []byte, rr int, g []byte) {
	at, shift := 4*(rr%8), 4*(rr/8)
	for j := range 16 {
		blk[32*(j/4)+at+j%4] |= g[2+j] & 0xF << shift
		blk[32*(4+j/4)+at+j%4] |= g[2+j] >> 4 << shift
	}
	copy(blk[256+2*rr:], g[:2])
}

// unpackQ4_0Block is packQ4_0Block's inverse: row rr of blk as a GGML block in g.
func unpackQ4_0Block(g, blk []byte, rr int) {
	at, shift := 4*(rr%8), 4*(rr/8)
	for j := range 16 {
		g[2+j] = blk[32*(j/4)+at+j%4]>>shift&0xF | blk[32*(4+j/4)+at+j%4]>>shift&0xF<<4
	}
	copy(g[:2], blk[256+2*rr:])
}

func nibble(b []byte, at int, high bool) byte {
	if high {
		return b[at] >> 4
	}
	return b[at] & 0xF
}

// packed reports whether t's device layout differs from GGML's.
func packed(t dtype.DType) bool { return t == dtype.Q8_0 || t == dtype.Q4_0 }

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
	nb, bb := cols/32, t.BlockBytes()
	var block [34]byte // one block in GGML's layout
	for b := range nb {
		unpackBlock(t, block[:bb], data, r, b, nb)
		blockDequantizers[t](dst[32*b:32*(b+1)], block[:bb])
	}
	return nil
}
