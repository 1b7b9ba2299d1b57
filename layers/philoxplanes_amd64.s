//go:build amd64 && !noasm

#include "textflag.h"

// philoxIota is the lane index of the 8 blocks of a pass.
DATA philoxIota<>+0(SB)/8, $0
DATA philoxIota<>+8(SB)/8, $1
DATA philoxIota<>+16(SB)/8, $2
DATA philoxIota<>+24(SB)/8, $3
DATA philoxIota<>+32(SB)/8, $4
DATA philoxIota<>+40(SB)/8, $5
DATA philoxIota<>+48(SB)/8, $6
DATA philoxIota<>+56(SB)/8, $7
GLOBL philoxIota<>(SB), RODATA|NOPTR, $64

// PHILOX_ROUND_AVX512 is one Philox4x32 round on the low 32 bits of each 64-bit lane: the
// state c0..c3, the spare register s, the round's keys k0, k1 (Z20 m0, Z21 m1). It leaves
// the next round's state in s, c2, c1, c0 and its spare in c3, so that an unrolled run of
// rounds rotates through five registers:
//
//	p0, p1 = c0·m0, c2·m1; c0, c1, c2, c3 = hi(p1)^c1^k0, lo(p1), hi(p0)^c3^k1, lo(p0)
#define PHILOX_ROUND_AVX512(c0, c1, c2, c3, s, k0, k1) \
	VPMULUDQ   Z20, c0, c0 \
	VPMULUDQ   Z21, c2, c2 \
	VPSRLQ     $32, c2, s \
	VPTERNLOGD $0x96, k0, c1, s \
	VPSRLQ     $32, c0, c1 \
	VPTERNLOGD $0x96, k1, c3, c1

// PHILOX_ROUND_AVX2 is PHILOX_ROUND_AVX512 on AVX2 (Y0 m0, Y1 m1), its keys broadcast from
// the memory operands k0, k1 into Y13, Y14 and each three-way XOR two VPXORs.
#define PHILOX_ROUND_AVX2(c0, c1, c2, c3, s, k0, k1) \
	VPMULUDQ     Y0, c0, c0 \
	VPMULUDQ     Y1, c2, c2 \
	VPBROADCASTD k0, Y13 \
	VPBROADCASTD k1, Y14 \
	VPSRLQ       $32, c2, s \
	VPXOR        c1, s, s \
	VPXOR        Y13, s, s \
	VPSRLQ       $32, c0, c1 \
	VPXOR        c3, c1, c1 \
	VPXOR        Y14, c1, c1

// func philoxPlanesAVX512(p *philoxPlanes, keys *[20]uint32, pos uint64, b0 uint32, n int)
//
// Philox4x32-10 of 8 counters (b0+j, pos, pos>>32, 0) a pass, one per 64-bit lane. Only
// each lane's low 32 bits are a word of the state: VPMULUDQ reads only those, XOR keeps
// them apart from the high bits, and VPMOVQD stores only those, so no masking is needed.
// The round keys (Z0-Z19) stay in registers; the state rotates through Z26-Z30 (a round
// writes c0 to the spare register and leaves the products where c0 and c2 were), unrolled
// so the rotation is in the register names. Registers: Z20 m0, Z21 m1, Z22 the step 8,
// Z23 pos, Z24 pos>>32, Z25 the pass's counters.
TEXT ·philoxPlanesAVX512(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), DI
	MOVQ keys+8(FP), SI
	MOVQ pos+16(FP), AX
	MOVL b0+24(FP), BX
	MOVQ n+32(FP), CX

	VPBROADCASTD 0(SI), Z0
	VPBROADCASTD 4(SI), Z1
	VPBROADCASTD 8(SI), Z2
	VPBROADCASTD 12(SI), Z3
	VPBROADCASTD 16(SI), Z4
	VPBROADCASTD 20(SI), Z5
	VPBROADCASTD 24(SI), Z6
	VPBROADCASTD 28(SI), Z7
	VPBROADCASTD 32(SI), Z8
	VPBROADCASTD 36(SI), Z9
	VPBROADCASTD 40(SI), Z10
	VPBROADCASTD 44(SI), Z11
	VPBROADCASTD 48(SI), Z12
	VPBROADCASTD 52(SI), Z13
	VPBROADCASTD 56(SI), Z14
	VPBROADCASTD 60(SI), Z15
	VPBROADCASTD 64(SI), Z16
	VPBROADCASTD 68(SI), Z17
	VPBROADCASTD 72(SI), Z18
	VPBROADCASTD 76(SI), Z19
	MOVL $0xD2511F53, R8
	VPBROADCASTQ R8, Z20
	MOVL $0xCD9E8D57, R8
	VPBROADCASTQ R8, Z21
	MOVL $8, R8
	VPBROADCASTQ R8, Z22
	VPBROADCASTQ AX, Z23
	SHRQ $32, AX
	VPBROADCASTQ AX, Z24
	VPBROADCASTQ BX, Z25
	VPADDQ philoxIota<>(SB), Z25, Z25
	XORQ R10, R10 // byte offset of the pass in each plane

pass:
	CMPQ CX, $0
	JLE  done
	VMOVDQA64 Z25, Z26
	VMOVDQA64 Z23, Z27
	VMOVDQA64 Z24, Z28
	VPXORQ    Z29, Z29, Z29
	PHILOX_ROUND_AVX512(Z26, Z27, Z28, Z29, Z30, Z0, Z1) // round 0
	PHILOX_ROUND_AVX512(Z30, Z28, Z27, Z26, Z29, Z2, Z3) // round 1
	PHILOX_ROUND_AVX512(Z29, Z27, Z28, Z30, Z26, Z4, Z5) // round 2
	PHILOX_ROUND_AVX512(Z26, Z28, Z27, Z29, Z30, Z6, Z7) // round 3
	PHILOX_ROUND_AVX512(Z30, Z27, Z28, Z26, Z29, Z8, Z9) // round 4
	PHILOX_ROUND_AVX512(Z29, Z28, Z27, Z30, Z26, Z10, Z11) // round 5
	PHILOX_ROUND_AVX512(Z26, Z27, Z28, Z29, Z30, Z12, Z13) // round 6
	PHILOX_ROUND_AVX512(Z30, Z28, Z27, Z26, Z29, Z14, Z15) // round 7
	PHILOX_ROUND_AVX512(Z29, Z27, Z28, Z30, Z26, Z16, Z17) // round 8
	PHILOX_ROUND_AVX512(Z26, Z28, Z27, Z29, Z30, Z18, Z19) // round 9
	VPMOVQD Z30, 0(DI)(R10*1)
	VPMOVQD Z27, 256(DI)(R10*1)
	VPMOVQD Z28, 512(DI)(R10*1)
	VPMOVQD Z26, 768(DI)(R10*1)
	VPADDQ Z22, Z25, Z25
	ADDQ $32, R10
	SUBQ $8, CX
	JMP  pass

done:
	VZEROUPPER
	RET

// func philoxPlanesAVX2(p *philoxPlanes, keys *[20]uint32, pos uint64, b0 uint32, n int)
//
// philoxPlanesAVX512's computation on AVX2: 4 blocks a pass, one per 64-bit lane of a
// YMM, the round keys broadcast from memory each round (16 registers do not hold them),
// the three-way XORs as two VPXORs, and each word's four low halves gathered into 128
// bits (VPSHUFD, VPERMQ) for the store. Registers: Y0 m0, Y1 m1, Y2 the step 4, Y3 pos,
// Y4 pos>>32, Y5 the pass's counters, Y8-Y12 the state, Y13-Y14 the round's keys.
TEXT ·philoxPlanesAVX2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), DI
	MOVQ keys+8(FP), SI
	MOVQ pos+16(FP), AX
	MOVL b0+24(FP), BX
	MOVQ n+32(FP), CX

	MOVQ $0xD2511F53, R8
	MOVQ R8, X0
	VPBROADCASTQ X0, Y0
	MOVQ $0xCD9E8D57, R8
	MOVQ R8, X1
	VPBROADCASTQ X1, Y1
	MOVQ $4, R8
	MOVQ R8, X2
	VPBROADCASTQ X2, Y2
	MOVQ AX, X3
	VPBROADCASTQ X3, Y3
	SHRQ $32, AX
	MOVQ AX, X4
	VPBROADCASTQ X4, Y4
	MOVQ BX, X5
	VPBROADCASTQ X5, Y5
	VPADDQ philoxIota<>(SB), Y5, Y5
	XORQ R10, R10 // byte offset of the pass in each plane

pass2:
	CMPQ CX, $0
	JLE  done2
	VMOVDQU Y5, Y8
	VMOVDQU Y3, Y9
	VMOVDQU Y4, Y10
	VPXOR   Y11, Y11, Y11
	PHILOX_ROUND_AVX2(Y8, Y9, Y10, Y11, Y12, 0(SI), 4(SI)) // round 0
	PHILOX_ROUND_AVX2(Y12, Y10, Y9, Y8, Y11, 8(SI), 12(SI)) // round 1
	PHILOX_ROUND_AVX2(Y11, Y9, Y10, Y12, Y8, 16(SI), 20(SI)) // round 2
	PHILOX_ROUND_AVX2(Y8, Y10, Y9, Y11, Y12, 24(SI), 28(SI)) // round 3
	PHILOX_ROUND_AVX2(Y12, Y9, Y10, Y8, Y11, 32(SI), 36(SI)) // round 4
	PHILOX_ROUND_AVX2(Y11, Y10, Y9, Y12, Y8, 40(SI), 44(SI)) // round 5
	PHILOX_ROUND_AVX2(Y8, Y9, Y10, Y11, Y12, 48(SI), 52(SI)) // round 6
	PHILOX_ROUND_AVX2(Y12, Y10, Y9, Y8, Y11, 56(SI), 60(SI)) // round 7
	PHILOX_ROUND_AVX2(Y11, Y9, Y10, Y12, Y8, 64(SI), 68(SI)) // round 8
	PHILOX_ROUND_AVX2(Y8, Y10, Y9, Y11, Y12, 72(SI), 76(SI)) // round 9
	VPSHUFD $0x08, Y12, Y12   // each lane's low word to dwords 0, 1 of its 128 bits
	VPERMQ  $0x08, Y12, Y12   // qwords 0 and 2: the four words in the low 128 bits
	VMOVDQU X12, 0(DI)(R10*1)
	VPSHUFD $0x08, Y9, Y9   // each lane's low word to dwords 0, 1 of its 128 bits
	VPERMQ  $0x08, Y9, Y9   // qwords 0 and 2: the four words in the low 128 bits
	VMOVDQU X9, 256(DI)(R10*1)
	VPSHUFD $0x08, Y10, Y10   // each lane's low word to dwords 0, 1 of its 128 bits
	VPERMQ  $0x08, Y10, Y10   // qwords 0 and 2: the four words in the low 128 bits
	VMOVDQU X10, 512(DI)(R10*1)
	VPSHUFD $0x08, Y8, Y8   // each lane's low word to dwords 0, 1 of its 128 bits
	VPERMQ  $0x08, Y8, Y8   // qwords 0 and 2: the four words in the low 128 bits
	VMOVDQU X8, 768(DI)(R10*1)
	VPADDQ Y2, Y5, Y5
	ADDQ $16, R10
	SUBQ $4, CX
	JMP  pass2

done2:
	VZEROUPPER
	RET
