//go:build amd64 && !noasm

#include "textflag.h"
#include "bf16dot_amd64.h"

// The bf16-dot kernels of LinearRows' bf16-dot mode (bf16dot_amd64.go): VDPBF16PS over
// activations already rounded to bf16 and bf16 weights as they lie in the matrix. Go's
// assembler has no AVX512_BF16 mnemonics, so the instructions are spelled in bytes (EVEX,
// checked against GNU as and objdump); each carries its mnemonic in a comment, operands in
// Go's order (sources first), from which TestVDPBF16PSBytes re-encodes it.
//
// An output's 16 partial sums are the lanes of one ZMM register: lane l takes the bf16
// pairs 16j+l of the row (elements 32j+2l and 32j+2l+1), one VDPBF16PS per 32 elements in
// increasing j; the last partial step loads only the row's remaining elements (a masked
// load, zeros beyond), and the lanes combine in COMBINE16's tree. That is dpbf16Dot's loop
// whatever the number of rows of x, so a GEMM row is bitwise its GEMV.

// COMBINE16 leaves in the low lane of X the sum of Z's 16 lanes in dpbf16Dot's tree:
// a[l]+a[l+8], then +4, +2, +1 (T a scratch register: ZT, YT, XT its views).
#define COMBINE16(Z, Y, X, ZT, YT, XT) \
	VEXTRACTF64X4 $1, Z, YT; \
	VADDPS        YT, Y, Y; \
	VEXTRACTF32X4 $1, Y, XT; \
	VADDPS        XT, X, X; \
	VPERMILPS     $0xEE, X, XT; \
	VADDPS        XT, X, X; \
	VMOVSHDUP     X, XT; \
	VADDSS        XT, X, X

// DOT4X4 continues the 16 partial sums Z0-Z15 (row i of x in Z16+i, weight row j in
// Z20+j: Z(4i+j)) by one 32-element step.
#define DOT4X4 \
	BYTE $0x62; BYTE $0xB2; BYTE $0x7E; BYTE $0x40; BYTE $0x52; BYTE $0xC4 /* VDPBF16PS Z20, Z16, Z0 */; \
	BYTE $0x62; BYTE $0xB2; BYTE $0x7E; BYTE $0x40; BYTE $0x52; BYTE $0xCD /* VDPBF16PS Z21, Z16, Z1 */; \
	BYTE $0x62; BYTE $0xB2; BYTE $0x7E; BYTE $0x40; BYTE $0x52; BYTE $0xD6 /* VDPBF16PS Z22, Z16, Z2 */; \
	BYTE $0x62; BYTE $0xB2; BYTE $0x7E; BYTE $0x40; BYTE $0x52; BYTE $0xDF /* VDPBF16PS Z23, Z16, Z3 */; \
	BYTE $0x62; BYTE $0xB2; BYTE $0x76; BYTE $0x40; BYTE $0x52; BYTE $0xE4 /* VDPBF16PS Z20, Z17, Z4 */; \
	BYTE $0x62; BYTE $0xB2; BYTE $0x76; BYTE $0x40; BYTE $0x52; BYTE $0xED /* VDPBF16PS Z21, Z17, Z5 */; \
	BYTE $0x62; BYTE $0xB2; BYTE $0x76; BYTE $0x40; BYTE $0x52; BYTE $0xF6 /* VDPBF16PS Z22, Z17, Z6 */; \
	BYTE $0x62; BYTE $0xB2; BYTE $0x76; BYTE $0x40; BYTE $0x52; BYTE $0xFF /* VDPBF16PS Z23, Z17, Z7 */; \
	BYTE $0x62; BYTE $0x32; BYTE $0x6E; BYTE $0x40; BYTE $0x52; BYTE $0xC4 /* VDPBF16PS Z20, Z18, Z8 */; \
	BYTE $0x62; BYTE $0x32; BYTE $0x6E; BYTE $0x40; BYTE $0x52; BYTE $0xCD /* VDPBF16PS Z21, Z18, Z9 */; \
	BYTE $0x62; BYTE $0x32; BYTE $0x6E; BYTE $0x40; BYTE $0x52; BYTE $0xD6 /* VDPBF16PS Z22, Z18, Z10 */; \
	BYTE $0x62; BYTE $0x32; BYTE $0x6E; BYTE $0x40; BYTE $0x52; BYTE $0xDF /* VDPBF16PS Z23, Z18, Z11 */; \
	BYTE $0x62; BYTE $0x32; BYTE $0x66; BYTE $0x40; BYTE $0x52; BYTE $0xE4 /* VDPBF16PS Z20, Z19, Z12 */; \
	BYTE $0x62; BYTE $0x32; BYTE $0x66; BYTE $0x40; BYTE $0x52; BYTE $0xED /* VDPBF16PS Z21, Z19, Z13 */; \
	BYTE $0x62; BYTE $0x32; BYTE $0x66; BYTE $0x40; BYTE $0x52; BYTE $0xF6 /* VDPBF16PS Z22, Z19, Z14 */; \
	BYTE $0x62; BYTE $0x32; BYTE $0x66; BYTE $0x40; BYTE $0x52; BYTE $0xFF /* VDPBF16PS Z23, Z19, Z15 */

// DOT1X4 continues Z0-Z3 (the row of x in Z16, weight row j in Z20+j) by one step.
#define DOT1X4 \
	BYTE $0x62; BYTE $0xB2; BYTE $0x7E; BYTE $0x40; BYTE $0x52; BYTE $0xC4 /* VDPBF16PS Z20, Z16, Z0 */; \
	BYTE $0x62; BYTE $0xB2; BYTE $0x7E; BYTE $0x40; BYTE $0x52; BYTE $0xCD /* VDPBF16PS Z21, Z16, Z1 */; \
	BYTE $0x62; BYTE $0xB2; BYTE $0x7E; BYTE $0x40; BYTE $0x52; BYTE $0xD6 /* VDPBF16PS Z22, Z16, Z2 */; \
	BYTE $0x62; BYTE $0xB2; BYTE $0x7E; BYTE $0x40; BYTE $0x52; BYTE $0xDF /* VDPBF16PS Z23, Z16, Z3 */

// func bf16Dot4AVX512(y *float32, ystride int, x *uint16, xstride, m int, w unsafe.Pointer, off *[4]int, n int, tail uint32)
TEXT ·bf16Dot4AVX512(SB), NOSPLIT, $0-68
	MOVQ y+0(FP), R13
	MOVQ x+16(FP), SI
	MOVQ w+40(FP), AX
	MOVQ off+48(FP), CX
	ROWS4_16
	MOVQ n+56(FP), R12
	ANDQ $-32, R12
	SHLQ $1, R12 // bytes of whole 32-element steps
	MOVL tail+64(FP), AX
	KMOVD AX, K1
	MOVQ m+32(FP), CX

block4:
	CMPQ CX, $4
	JLT  rows1
	MOVQ xstride+24(FP), AX
	LEAQ (SI)(AX*1), DI
	LEAQ (DI)(AX*1), BX
	LEAQ (BX)(AX*1), DX

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	XORQ AX, AX
	CMPQ AX, R12
	JGE  tail4
loop4:
	VMOVDQU16 (SI)(AX*1), Z16
	VMOVDQU16 (DI)(AX*1), Z17
	VMOVDQU16 (BX)(AX*1), Z18
	VMOVDQU16 (DX)(AX*1), Z19
	VMOVDQU16 (R8)(AX*1), Z20
	VMOVDQU16 (R9)(AX*1), Z21
	VMOVDQU16 (R10)(AX*1), Z22
	VMOVDQU16 (R11)(AX*1), Z23
	DOT4X4
	ADDQ $64, AX
	CMPQ AX, R12
	JLT  loop4
tail4:
	KORTESTD K1, K1
	JZ   done4
	VMOVDQU16.Z (SI)(AX*1), K1, Z16
	VMOVDQU16.Z (DI)(AX*1), K1, Z17
	VMOVDQU16.Z (BX)(AX*1), K1, Z18
	VMOVDQU16.Z (DX)(AX*1), K1, Z19
	VMOVDQU16.Z (R8)(AX*1), K1, Z20
	VMOVDQU16.Z (R9)(AX*1), K1, Z21
	VMOVDQU16.Z (R10)(AX*1), K1, Z22
	VMOVDQU16.Z (R11)(AX*1), K1, Z23
	DOT4X4
done4:
	COMBINE16(Z0, Y0, X0, Z24, Y24, X24)
	COMBINE16(Z1, Y1, X1, Z24, Y24, X24)
	COMBINE16(Z2, Y2, X2, Z24, Y24, X24)
	COMBINE16(Z3, Y3, X3, Z24, Y24, X24)
	COMBINE16(Z4, Y4, X4, Z24, Y24, X24)
	COMBINE16(Z5, Y5, X5, Z24, Y24, X24)
	COMBINE16(Z6, Y6, X6, Z24, Y24, X24)
	COMBINE16(Z7, Y7, X7, Z24, Y24, X24)
	COMBINE16(Z8, Y8, X8, Z24, Y24, X24)
	COMBINE16(Z9, Y9, X9, Z24, Y24, X24)
	COMBINE16(Z10, Y10, X10, Z24, Y24, X24)
	COMBINE16(Z11, Y11, X11, Z24, Y24, X24)
	COMBINE16(Z12, Y12, X12, Z24, Y24, X24)
	COMBINE16(Z13, Y13, X13, Z24, Y24, X24)
	COMBINE16(Z14, Y14, X14, Z24, Y24, X24)
	COMBINE16(Z15, Y15, X15, Z24, Y24, X24)
	MOVQ ystride+8(FP), AX
	MOVQ R13, DI
	VMOVSS X0, 0(DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, 12(DI)
	ADDQ AX, DI
	VMOVSS X4, 0(DI)
	VMOVSS X5, 4(DI)
	VMOVSS X6, 8(DI)
	VMOVSS X7, 12(DI)
	ADDQ AX, DI
	VMOVSS X8, 0(DI)
	VMOVSS X9, 4(DI)
	VMOVSS X10, 8(DI)
	VMOVSS X11, 12(DI)
	ADDQ AX, DI
	VMOVSS X12, 0(DI)
	VMOVSS X13, 4(DI)
	VMOVSS X14, 8(DI)
	VMOVSS X15, 12(DI)
	LEAQ (R13)(AX*4), R13
	MOVQ xstride+24(FP), AX
	LEAQ (SI)(AX*4), SI
	SUBQ $4, CX
	JMP  block4

rows1:
	TESTQ CX, CX
	JZ    ret
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ AX, AX
	CMPQ AX, R12
	JGE  tail1
loop1:
	PREFETCHT0 4096(R8)(AX*1) // one line of each row a step, 4 KiB ahead: see bf16DotQuartersAVX512
	PREFETCHT0 4096(R9)(AX*1)
	PREFETCHT0 4096(R10)(AX*1)
	PREFETCHT0 4096(R11)(AX*1)
	VMOVDQU16 (SI)(AX*1), Z16
	VMOVDQU16 (R8)(AX*1), Z20
	VMOVDQU16 (R9)(AX*1), Z21
	VMOVDQU16 (R10)(AX*1), Z22
	VMOVDQU16 (R11)(AX*1), Z23
	DOT1X4
	ADDQ $64, AX
	CMPQ AX, R12
	JLT  loop1
tail1:
	KORTESTD K1, K1
	JZ   done1
	VMOVDQU16.Z (SI)(AX*1), K1, Z16
	VMOVDQU16.Z (R8)(AX*1), K1, Z20
	VMOVDQU16.Z (R9)(AX*1), K1, Z21
	VMOVDQU16.Z (R10)(AX*1), K1, Z22
	VMOVDQU16.Z (R11)(AX*1), K1, Z23
	DOT1X4
done1:
	COMBINE16(Z0, Y0, X0, Z24, Y24, X24)
	COMBINE16(Z1, Y1, X1, Z24, Y24, X24)
	COMBINE16(Z2, Y2, X2, Z24, Y24, X24)
	COMBINE16(Z3, Y3, X3, Z24, Y24, X24)
	VMOVSS X0, 0(R13)
	VMOVSS X1, 4(R13)
	VMOVSS X2, 8(R13)
	VMOVSS X3, 12(R13)
	ADDQ ystride+8(FP), R13
	ADDQ xstride+24(FP), SI
	DECQ CX
	JMP  rows1

ret:
	VZEROUPPER
	RET

// func roundBF16AVX512(dst *uint16, src *float32, n int)
TEXT ·roundBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   rdone
rloop:
	VMOVUPS (SI), Z0
	BYTE $0x62; BYTE $0xF2; BYTE $0x7E; BYTE $0x48; BYTE $0x72; BYTE $0xC8 // VCVTNEPS2BF16 Z0, Y1
	VMOVDQU Y1, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  rloop
rdone:
	VZEROUPPER
	RET

