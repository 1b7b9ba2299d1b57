package quant

import "github.com/tpslice/tpslice/dtype"

// The grouped layouts interleave GroupRows rows, as llama.cpp's repacked CPU layouts do, so
// that a kernel's vector lanes are rows: one instruction multiplies four values of each of
// 16 rows with the same four activations (VPDPBUSD, the activations broadcast). A group
// stores block b of its 16 rows together, GroupRows·t.BlockBytes() bytes, blocks in order;
// a matrix's last group is padded with rows of zeros. Within a group's block, the 4-bit
// values sit in quads: quad k (values 4k..4k+3) takes 32 bytes, whose byte m holds in its
// low nibble value 4k+m%4 of row m/4 and in its high nibble that of row 8+m/4 (quadAt).
// After the quads, the rows' scales, transposed so that one load meets all 16 rows. Q8_0
// has bytes, not nibbles: its quad k takes 64 bytes, byte 4·rr+m value 4k+m of row rr.
//
//	Q8_0 (544 bytes):  quads[8] (int8), d[16] f16
//	Q4_0 (288 bytes):  quads[8], d[16] f16
//	Q5_0 (352 bytes):  quads[8], fifth[8] (as Q5_K's), d[16] f16
//	Q5_1 (384 bytes):  quads[8], fifth[8], d[16] f16, m[16] f16
//	Q4_K (2304 bytes): quads[64], scales[12][16] (byte p of every row's 12 packed scale
//	                   bytes, rows in order), d[16] f16, dmin[16] f16
//	Q5_K (2816 bytes): quads[64], fifth[64] (8 bytes a quad: bit m is the fifth bit of
//	                   the value whose nibble is m of spread(quad)), then as Q4_K
//	Q6_K (3360 bytes): quads[64] (the low 4 bits), high[64] (16 bytes a quad: bits 2L and
//	                   2L+1 of byte j are the high bits of the value at 16L+j of
//	                   spread(quad)), scales[16][16] int8, d[16] f16
//
// where spread(quad) is the order in which a kernel takes the quad's 64 nibbles, the low
// ones (rows 0-7) then the high ones (rows 8-15): nibble m is value 4k + m%4 of row m/4
// (spreadAt).

// GroupRows is the number of rows a grouped layout interleaves.
const GroupRows = 16

// groupCodec moves row rr's GGML block g into its place in a group's block blk (which
// starts zeroed: nibbles are ORed in) and back.
type groupCodec struct {
	pack   func(blk []byte, rr int, g []byte)
	unpack func(g, blk []byte, rr int)
}

// groupCodecs are the codecs of the grouped types; never written.
var groupCodecs = map[dtype.DType]groupCodec{
	dtype.Q8_0: {packQ8_0Block, unpackQ8_0Block},
	dtype.Q4_0: {packQ4_0Block, unpackQ4_0Block},
	dtype.Q4_K: {packQ4_KBlock, unpackQ4_KBlock},
	dtype.Q5_K: {packQ5_KBlock, unpackQ5_KBlock},
	dtype.Q6_K: {packQ6_KBlock, unpackQ6_KBlock},
	dtype.Q5_0: {packQ5_0Block, unpackQ5_0Block},
	dtype.Q5_1: {packQ5_1Block, unpackQ5_1Block},
}

// grouped reports whether t's device layout interleaves groups of rows: every block type's
// does (each has its groupCodecs entry). No map lookup: the kernels' row bookkeeping asks
// for every call.
func grouped(t dtype.DType) bool { return t.Quantized() }

// RowAlign is the granularity of the row ranges Dot computes for t: GroupRows for the
// grouped types (a range may also end at the matrix's last row), 1 otherwise.
func RowAlign(t dtype.DType) int {
	if grouped(t) {
		return GroupRows
	}
	return 1
}

// lockstepGroups is the most groups a kernel reads in lockstep (AVX-512's Q8_0 and Q4_0
// eight and AVX2's Q8_0 eight; AVX-512's Q4_K four and AVX2's Q4_0 four divide it): a run
// of groups given to one call is a multiple of it where it can be.
const lockstepGroups = 8

// SplitRows is the granularity in which a caller should split t's rows among workers: a
// whole lockstep run of groups for the grouped types (one core reads several streams of
// weights faster than one, docs/benchmarks/quantized.md, "Reading several groups at
// once"), 1 otherwise. A split finer than this, down to RowAlign, computes the same bits
// more slowly.
func SplitRows(t dtype.DType) int {
	if grouped(t) {
		return GroupRows * lockstepGroups
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

// groupBlock returns block b of the group of row r of a grouped matrix of nb blocks a row.
func groupBlock(t dtype.DType, w []byte, r, b, nb int) []byte {
	n := GroupRows * t.BlockBytes()
	return w[(r/GroupRows*nb+b)*n:][:n]
}

// quadAt locates value i of row rr (0..15) among a group's quads: its byte and the shift
// of its nibble.
func quadAt(i, rr int) (int, int) { return 32*(i/4) + 4*(rr%8) + i%4, 4 * (rr / 8) }

// spreadAt is the position of value i of row rr in spread(quad i/4).
func spreadAt(i, rr int) int { return 4*rr + i%4 }

// quadValue is the nibble of value i of row rr of a group's block.
func quadValue(blk []byte, i, rr int) byte {
	at, shift := quadAt(i, rr)
	return blk[at] >> shift & 0xF
}

func putQuadValue(blk []byte, i, rr int, v byte) {
	at, shift := quadAt(i, rr)
	blk[at] |= v << shift
}

// q8At is the byte of value i of row rr in a group's Q8_0 block.
func q8At(i, rr int) int { return 64*(i/4) + 4*rr + i%4 }

func packQ8_0Block(blk []byte, rr int, g []byte) {
	for i := range 32 {
		blk[q8At(i, rr)] = g[q80Qs+i]
	}
	copy(blk[512+2*rr:], g[q80D:q80D+2])
}

func unpackQ8_0Block(g, blk []byte, rr int) {
	for i := range 32 {
		g[q80Qs+i] = blk[q8At(i, rr)]
	}
	copy(g[q80D:q80D+2], blk[512+2*rr:])
}

// packQ4_0Block: GGML byte j holds values j (low nibble) and j+16 (high).
func packQ4_0Block(blk []byte, rr int, g []byte) {
	for j := range 16 {
		putQuadValue(blk, j, rr, g[q40Qs+j]&0xF)
		putQuadValue(blk, j+16, rr, g[q40Qs+j]>>4)
	}
	copy(blk[256+2*rr:], g[q40D:q40D+2])
}

func unpackQ4_0Block(g, blk []byte, rr int) {
	for j := range 16 {
		g[q40Qs+j] = quadValue(blk, j, rr) | quadValue(blk, j+16, rr)<<4
	}
	copy(g[q40D:q40D+2], blk[256+2*rr:])
}

// Offsets within a group's Q5_0 and Q5_1 blocks.
const (
	gq5Fifth = 8 * 32
	gq5D     = gq5Fifth + 8*8
	gq51M    = gq5D + 2*GroupRows
)

func packQ5_0Block(blk []byte, rr int, g []byte) { packQ5Block(blk, rr, g, false) }

func unpackQ5_0Block(g, blk []byte, rr int) { unpackQ5Block(g, blk, rr, false) }

func packQ5_1Block(blk []byte, rr int, g []byte) { packQ5Block(blk, rr, g, true) }

func unpackQ5_1Block(g, blk []byte, rr int) { unpackQ5Block(g, blk, rr, true) }

// packQ5Block places a GGML Q5_0 block g (with its min, Q5_1's) as row rr of a group's
// block: Q4_0's nibbles and Q5_K's fifth-bit planes.
func packQ5Block(blk []byte, rr int, g []byte, withMin bool) {
	d, qh, qs := q50D, q50Qh, q50Qs
	if withMin {
		d, qh, qs = q51D, q51Qh, q51Qs
		copy(blk[gq51M+2*rr:], g[q51M:q51M+2])
	}
	for j := range 16 {
		lo, hi := fifthBits(g, qh, qs, j)
		putQ5Value(blk, j, rr, byte(lo))
		putQ5Value(blk, j+16, rr, byte(hi))
	}
	copy(blk[gq5D+2*rr:], g[d:d+2])
}

func unpackQ5Block(g, blk []byte, rr int, withMin bool) {
	d, qh, qs := q50D, q50Qh, q50Qs
	if withMin {
		d, qh, qs = q51D, q51Qh, q51Qs
		copy(g[q51M:q51M+2], blk[gq51M+2*rr:])
	}
	clear(g[qh : qh+4])
	for j := range 16 {
		putFifthBits(g, qh, qs, j, q5Value(blk, j, rr), q5Value(blk, j+16, rr))
	}
	copy(g[d:d+2], blk[gq5D+2*rr:])
}

// putQ5Value ORs the five bits v of value i of row rr into a group's Q5_0 or Q5_1 block.
func putQ5Value(blk []byte, i, rr int, v byte) {
	putQuadValue(blk, i, rr, v&0xF)
	putFifth(blk, gq5Fifth, i, rr, v>>4)
}

// q5Value is the five bits of value i of row rr of a group's Q5_0 or Q5_1 block.
func q5Value(blk []byte, i, rr int) byte {
	return quadValue(blk, i, rr) | fifthAt(blk, gq5Fifth, i, rr)<<4
}

// putFifth ORs bit (0 or 1), the fifth bit of value i of row rr, into the fifth-bit planes
// at plane of a group's block (8 bytes a quad: bit m is that of the value whose nibble is m
// of spread(quad)); fifthAt reads it back.
func putFifth(blk []byte, plane, i, rr int, bit byte) {
	m := spreadAt(i, rr)
	blk[plane+8*(i/4)+m/8] |= bit << (m % 8)
}

func fifthAt(blk []byte, plane, i, rr int) byte {
	m := spreadAt(i, rr)
	return blk[plane+8*(i/4)+m/8] >> (m % 8) & 1
}

// Offsets within a group's K-quant blocks.
const (
	gq4KScales = 64 * 32
	gq4KD      = gq4KScales + 12*GroupRows
	gq4KDmin   = gq4KD + 2*GroupRows

	gq5KFifth  = 64 * 32
	gq5KScales = gq5KFifth + 64*8
	gq5KD      = gq5KScales + 12*GroupRows
	gq5KDmin   = gq5KD + 2*GroupRows

	gq6KHigh   = 64 * 32
	gq6KScales = gq6KHigh + 64*16
	gq6KD      = gq6KScales + 16*GroupRows
)

// q4KNibble locates value i of a GGML Q4_K block's qs: byte 32c+l holds value 64c+l in its
// low nibble and 64c+32+l in its high nibble.
func q4KNibble(i int) (int, int) { return q4KQs + 32*(i/64) + i%32, 4 * (i % 64 / 32) }

func packQ4_KBlock(blk []byte, rr int, g []byte) { packK4(blk, rr, g, q4KQs, gq4KScales) }

func unpackQ4_KBlock(g, blk []byte, rr int) { unpackK4(g, blk, rr, q4KQs, gq4KScales) }

// Q5_K: a Q4_K block with a fifth bit a value; GGML keeps bit i/32 of qh[i%32].
func packQ5_KBlock(blk []byte, rr int, g []byte) {
	packK4(blk, rr, g, q5KQs, gq5KScales)
	for i := range kBlock {
		putFifth(blk, gq5KFifth, i, rr, g[q5KQh+i%32]>>(i/32)&1)
	}
}

func unpackQ5_KBlock(g, blk []byte, rr int) {
	unpackK4(g, blk, rr, q5KQs, gq5KScales)
	clear(g[q5KQh : q5KQh+32])
	for i := range kBlock {
		g[q5KQh+i%32] |= fifthAt(blk, gq5KFifth, i, rr) << (i / 32)
	}
}

// packK4 places the nibbles of a GGML Q4_K or Q5_K block g (its qs at qs), its 12 scale
// bytes (transposed, at scales of the group's block) and its d and dmin (after them).
// Both types keep d, dmin and the scales at the same offsets.
func packK4(blk []byte, rr int, g []byte, qs, scales int) {
	for i := range kBlock {
		at, shift := q4KNibble(i)
		putQuadValue(blk, i, rr, g[qs-q4KQs+at]>>shift&0xF)
	}
	for p := range 12 {
		blk[scales+GroupRows*p+rr] = g[q4KScales+p]
	}
	d := scales + 12*GroupRows
	copy(blk[d+2*rr:], g[q4KD:q4KD+2])
	copy(blk[d+2*GroupRows+2*rr:], g[q4KDmin:q4KDmin+2])
}

// unpackK4 is packK4's inverse.
func unpackK4(g, blk []byte, rr int, qs, scales int) {
	clear(g[qs : qs+128])
	for i := range kBlock {
		at, shift := q4KNibble(i)
		g[qs-q4KQs+at] |= quadValue(blk, i, rr) << shift
	}
	for p := range 12 {
		g[q4KScales+p] = blk[scales+GroupRows*p+rr]
	}
	d := scales + 12*GroupRows
	copy(g[q4KD:q4KD+2], blk[d+2*rr:])
	copy(g[q4KDmin:q4KDmin+2], blk[d+2*GroupRows+2*rr:])
}

// groupScalesK4 returns row rr's 12 packed scale bytes of a group's Q4_K or Q5_K block
// whose transposed scales begin at scales.
func groupScalesK4(blk []byte, rr, scales int) [12]byte {
	var q [12]byte
	for p := range q {
		q[p] = blk[scales+GroupRows*p+rr]
	}
	return q
}

// Q6_K: the low 4 bits of the stored values (0..63) in the quads, their high 2 bits in
// the high plane.
func packQ6_KBlock(blk []byte, rr int, g []byte) {
	for i := range kBlock {
		u := byte(q6KValue(g, i))
		putQuadValue(blk, i, rr, u&0xF)
		at, shift := q6HighAt(i, rr)
		blk[at] |= u >> 4 << shift
	}
	for k := range 16 {
		blk[gq6KScales+GroupRows*k+rr] = g[q6KScales+k]
	}
	copy(blk[gq6KD+2*rr:], g[q6KD:q6KD+2])
}

func unpackQ6_KBlock(g, blk []byte, rr int) {
	clear(g[q6KQl:q6KScales])
	for i := range kBlock {
		putQ6KValue(g, i, q6Value(blk, i, rr))
	}
	for k := range 16 {
		g[q6KScales+k] = blk[gq6KScales+GroupRows*k+rr]
	}
	copy(g[q6KD:q6KD+2], blk[gq6KD+2*rr:])
}

// q6HighAt locates the high 2 bits of value i of row rr in a group's Q6_K block.
func q6HighAt(i, rr int) (int, int) {
	m := spreadAt(i, rr)
	return gq6KHigh + 16*(i/4) + m%16, 2 * (m / 16)
}

// q6Value is the stored 6-bit value of value i of row rr of a group's Q6_K block.
func q6Value(blk []byte, i, rr int) int {
	at, shift := q6HighAt(i, rr)
	return int(quadValue(blk, i, rr)) | int(blk[at]>>shift&3)<<4
}
