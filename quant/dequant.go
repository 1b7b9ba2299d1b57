package quant

import (
	"encoding/binary"
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// Dequantize converts GGML blocks of type t into f32 values, as llama.cpp's reference
// dequantizers (ggml-quants.c) compute them, operation for operation in f32 (each product
// rounded before the next operation; no fused multiply-add):
//
//	Q8_0: y = float32(q) * d
//	Q4_0: y = float32(q-8) * d
//	Q4_K: y = float32(d*sc)*q - float32(dmin*m)          (sc, m the sub-block's 6-bit pair)
//	Q5_K: as Q4_K with q = nibble + 16·(its qh bit)
//	Q6_K: y = float32(d*sc) * float32(q-32)              (sc the int8 scale of 16 values)
//
// src holds len(dst)/BlockSize whole blocks; len(dst) must be a whole number of blocks.
func Dequantize(t dtype.DType, dst []float32, src []byte) error {
	if !t.Quantized() {
		return fmt.Errorf("quant: dequantize: %v is not a block type", t)
	}
	if !t.Whole(len(dst)) || len(src) != t.Bytes(len(dst)) {
		return fmt.Errorf("quant: dequantize %d %v values: want a whole number of %d-value blocks in %d bytes, have %d bytes",
			len(dst), t, t.BlockSize(), t.Bytes(len(dst)), len(src))
	}
	bs, bb := t.BlockSize(), t.BlockBytes()
	for b := range len(dst) / bs {
		blockDequantizers[t](dst[b*bs:(b+1)*bs], src[b*bb:(b+1)*bb])
	}
	return nil
}

// blockDequantizers decode one block of each type; never written.
var blockDequantizers = map[dtype.DType]func(y []float32, b []byte){
	dtype.Q8_0: dequantQ8_0,
	dtype.Q4_0: dequantQ4_0,
	dtype.Q4_K: func(y []float32, b []byte) { dequantQxK(y, b, false) },
	dtype.Q5_K: func(y []float32, b []byte) { dequantQxK(y, b, true) },
	dtype.Q6_K: dequantQ6_K,
	dtype.Q5_0: dequantQ5_0,
	dtype.Q5_1: dequantQ5_1,
}

func dequantQ8_0(y []float32, b []byte) {
	d := f16At(b, q80D)
	for j := range 32 {
		y[j] = float32(int8(b[q80Qs+j])) * d
	}
}

func dequantQ4_0(y []float32, b []byte) {
	d := f16At(b, q40D)
	for j := range 16 {
		q := b[q40Qs+j]
		y[j] = float32(int(q&0xF)-8) * d
		y[j+16] = float32(int(q>>4)-8) * d
	}
}

// fifthBits returns value j's and value j+16's five bits (j < 16) of a Q5_0 or Q5_1 block
// whose qh and qs start at qh and qs.
func fifthBits(b []byte, qh, qs, j int) (lo, hi int) {
	h := binary.LittleEndian.Uint32(b[qh:])
	q := b[qs+j]
	return int(q&0xF) | int(h>>j&1)<<4, int(q>>4) | int(h>>(j+16)&1)<<4
}

func dequantQ5_0(y []float32, b []byte) {
	d := f16At(b, q50D)
	for j := range 16 {
		lo, hi := fifthBits(b, q50Qh, q50Qs, j)
		y[j] = float32(lo-16) * d
		y[j+16] = float32(hi-16) * d
	}
}

// dequantQ5_1 rounds d·q to f32 before adding m, as dequantize_row_q5_1's x0*d + m does
// unfused (the conversion keeps Go from fusing them into one FMA).
func dequantQ5_1(y []float32, b []byte) {
	d, m := f16At(b, q51D), f16At(b, q51M)
	for j := range 16 {
		lo, hi := fifthBits(b, q51Qh, q51Qs, j)
		y[j] = float32(float32(lo)*d) + m
		y[j+16] = float32(float32(hi)*d) + m
	}
}

// dequantQxK decodes a Q4_K block, or with q5 a Q5_K block (whose values take a fifth bit
// from qh and whose values start after it).
func dequantQxK(y []float32, b []byte, q5 bool) {
	d, dmin := f16At(b, q4KD), f16At(b, q4KDmin)
	scales, qs := b[q4KScales:q4KScales+12], b[q4KQs:q4KQs+128]
	if q5 {
		qs = b[q5KQs : q5KQs+128]
	}
	for c := range 4 {
		sc1, m1 := scaleMinK4(2*c, scales)
		sc2, m2 := scaleMinK4(2*c+1, scales)
		d1, min1 := float32(d*float32(sc1)), float32(dmin*float32(m1))
		d2, min2 := float32(d*float32(sc2)), float32(dmin*float32(m2))
		for l := range 32 {
			lo, hi := qs[32*c+l]&0xF, qs[32*c+l]>>4
			if q5 {
				lo |= (b[q5KQh+l] >> (2 * c) & 1) << 4
				hi |= (b[q5KQh+l] >> (2*c + 1) & 1) << 4
			}
			y[64*c+l] = float32(d1*float32(lo)) - min1
			y[64*c+32+l] = float32(d2*float32(hi)) - min2
		}
	}
}

func dequantQ6_K(y []float32, b []byte) {
	d := f16At(b, q6KD)
	for i := range kBlock {
		y[i] = float32(d*float32(int8(b[q6KScales+i/16]))) * float32(q6KValue(b, i)-32)
	}
}

// q6KValue is the stored 6-bit value (0..63) of value i of a Q6_K block: in half h = i/128,
// for l = i%32 and quarter k = (i%128)/32, the low 4 bits are the low (k < 2) or high
// (k ≥ 2) nibble of ql[64h + l + 32·(k%2)], the high 2 bits are bits 2k, 2k+1 of
// qh[32h + l].
func q6KValue(b []byte, i int) int {
	h, k, l := i/128, (i%128)/32, i%32
	ql := b[q6KQl+64*h+l+32*(k%2)]
	if k >= 2 {
		ql >>= 4
	}
	qh := b[q6KQh+32*h+l] >> (2 * k) & 3
	return int(ql&0xF) | int(qh)<<4
}

// putQ6KValue ORs the stored value u of value i into a Q6_K block, q6KValue's inverse.
func putQ6KValue(b []byte, i, u int) {
	h, k, l := i/128, (i%128)/32, i%32
	shift := 0
	if k >= 2 {
		shift = 4
	}
	b[q6KQl+64*h+l+32*(k%2)] |= byte(u&0xF) << shift
	b[q6KQh+32*h+l] |= byte(u>>4) << (2 * k)
}
