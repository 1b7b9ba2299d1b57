package quant

import (
	"encoding/binary"
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// The byte layouts of GGML's blocks (ggml-common.h), offsets within one block. Every f16 is
// little-endian IEEE half precision.
const (
	// block_q8_0: d f16, qs[32] int8.
	q80D, q80Qs = 0, 2
	// block_q4_0: d f16, qs[16]: byte j holds value j in its low nibble and value j+16 in
	// its high nibble, each offset by 8.
	q40D, q40Qs = 0, 2
	// block_q4_K: d f16, dmin f16, scales[12] (8 packed 6-bit scale/min pairs), qs[128]:
	// byte 32c+l holds value 64c+l in its low nibble and 64c+32+l in its high nibble.
	q4KD, q4KDmin, q4KScales, q4KQs = 0, 2, 4, 16
	// block_q5_K: as block_q4_K with qh[32] before qs: bit 2c of qh[l] is the fifth bit of
	// value 64c+l, bit 2c+1 that of value 64c+32+l.
	q5KD, q5KDmin, q5KScales, q5KQh, q5KQs = 0, 2, 4, 16, 48
	// block_q6_K: ql[128], qh[64], scales[16] int8 (one per 16 values), d f16 last.
	q6KQl, q6KQh, q6KScales, q6KD = 0, 128, 192, 208
	// block_q5_0: d f16, qh[4] (a little-endian uint32 whose bit j is the fifth bit of
	// value j), qs[16] as block_q4_0's; the five bits are offset by 16.
	q50D, q50Qh, q50Qs = 0, 2, 6
	// block_q5_1: d f16, m f16 (the block's min), then qh and qs as block_q5_0's, with no
	// offset: a value is d·q + m.
	q51D, q51M, q51Qh, q51Qs = 0, 2, 4, 8
)

// kBlock is the number of values of a K-quant super-block (QK_K).
const kBlock = 256

func f16At(b []byte, off int) float32 { return dtype.F16ToF32(binary.LittleEndian.Uint16(b[off:])) }

func putF16(b []byte, off int, f float32) { binary.LittleEndian.PutUint16(b[off:], dtype.F32ToF16(f)) }

// scaleMinK4 decodes the 6-bit scale and min of sub-block j (0..7) from a Q4_K or Q5_K
// block's 12 scale bytes q (llama.cpp's get_scale_min_k4): sub-blocks 0-3 keep theirs in
// the low 6 bits of bytes j and j+4; sub-blocks 4-7 keep their low 4 bits in byte j+4 and
// their high 2 bits in the top bits of bytes j-4 (scale) and j (min).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// putScaleMinK4 packs eight 6-bit (scale, min) pairs into q[0:12], scaleMinK4's inverse.
func putScaleMinK4(q []byte, sc, m *[8]uint8) {
	for j := range 4 {
		q[j] = sc[j] | (sc[j+4]>>4)<<6
		q[j+4] = m[j] | (m[j+4]>>4)<<6
		q[j+8] = sc[j+4]&0xF | (m[j+4]&0xF)<<4
	}
}

// checkRows reports whether src holds a whole number of rows of cols values of t, and
// returns how many.
func checkRows(t dtype.DType, cols int, src []byte) (int, error) {
	if !grouped(t) {
		return 0, fmt.Errorf("quant: %v is not a block type that kernels take", t)
	}
	if err := t.CheckRow(cols); err != nil {
		return 0, fmt.Errorf("quant: %w", err)
	}
	rb := t.Bytes(cols)
	if len(src)%rb != 0 {
		return 0, fmt.Errorf("quant: %d bytes are not a whole number of %v rows of %d values (%d bytes each)", len(src), t, cols, rb)
	}
	return len(src) / rb, nil
}
