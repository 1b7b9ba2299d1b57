//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 kernel of Dot for Q8_0, for CPUs without AVX-512: the contract of
// dot_avx512_amd64.s,
//
//	func dotQ8_0AVX2(y *float32, w *byte, wstride, rows int, a *byte, n int)
//
// in 32-byte registers. The reference's 16 lanes are two registers here (lanes 0-7 and
// 8-15); products come from VPMADDWD, added with VPADDD, all exact; the f32 operations are
// the reference's.
//
// Registers: DI y, SI the weight row, CX rows left, DX a, R8 n; per row R9 the weights, R10
// their scales, R11 the activations' values, R12 their scales; BX points at the frame,
// where per-chunk scales go.

// COMBINE2(LO, HI, OUT): OUT = combine16 of the lanes LO (0-7) and HI (8-15): lanes l and
// l+8, then ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)). Clobbers Y0, X1.
#define COMBINE2(LO, HI, OUT) \
	VADDPS       HI, LO, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1; \
	VADDSS       X1, X0, X0; \
	VMOVSS       X0, OUT

// The 32-value types: a pair of blocks (pairLayout) is four runs of 16 values, each
// widened to 16 words: A 0-15 in Y3, A 16-31 in Y4, B 0-15 in Y5, B 16-31 in Y6. Block
// A's quads are VPMADDWD(Y3, acts 0..) + VPMADDWD(Y4, acts 64..), B's likewise with acts
// 32.. and 96..; each block's are scaled and added to the accumulator of its parity (Y8:
// lanes 0-7, even blocks; Y9: lanes 8-15, odd blocks).

// PAIR2(AOFF, SA, SB) finishes a pair with activations at AOFF(R11) and scales at SA and
// SB (memory operands broadcast).
#define PAIR2(AOFF, SA, SB) \
	VPMADDWD     AOFF(R11), Y3, Y3; \
	VPMADDWD     (AOFF+64)(R11), Y4, Y4; \
	VPADDD       Y4, Y3, Y3; \
	VPMADDWD     (AOFF+32)(R11), Y5, Y5; \
	VPMADDWD     (AOFF+96)(R11), Y6, Y6; \
	VPADDD       Y6, Y5, Y5; \
	VCVTDQ2PS    Y3, Y3; \
	VBROADCASTSS SA, Y7; \
	VMULPS       Y7, Y3, Y3; \
	VADDPS       Y3, Y8, Y8; \
	VCVTDQ2PS    Y5, Y5; \
	VBROADCASTSS SB, Y7; \
	VMULPS       Y7, Y5, Y5; \
	VADDPS       Y5, Y9, Y9

// LONE2(AOFF, S): the same for a last block without a partner (values in Y3, Y4; its
// activations in order at AOFF(R11)); its index is even.
#define LONE2(AOFF, S) \
	VPMADDWD     AOFF(R11), Y3, Y3; \
	VPMADDWD     (AOFF+32)(R11), Y4, Y4; \
	VPADDD       Y4, Y3, Y3; \
	VCVTDQ2PS    Y3, Y3; \
	VBROADCASTSS S, Y7; \
	VMULPS       Y7, Y3, Y3; \
	VADDPS       Y3, Y8, Y8

// Q8_0WORDS2(WOFF): the pair at WOFF(R9) (A 0-15, B 0-15, A 16-31, B 16-31).
#define Q8_0WORDS2(WOFF) \
	VPMOVSXBW WOFF(R9), Y3; \
	VPMOVSXBW (WOFF+32)(R9), Y4; \
	VPMOVSXBW (WOFF+16)(R9), Y5; \
	VPMOVSXBW (WOFF+48)(R9), Y6

#define Q8_0LONE2 \
	VPMOVSXBW (R9), Y3; \
	VPMOVSXBW 16(R9), Y4

// SCALES8 stores the scales float32(dw·da) of 8 blocks (dw at (R10), da at (R12)) at (BX).
#define SCALES8 \
	VCVTPH2PS (R10), Y2; \
	VMULPS    (R12), Y2, Y2; \
	VMOVUPS   Y2, (BX)

// SCALE1(OFF) stores the scale of one block (dw at (R10), da at (R12)) at OFF(BX).
#define SCALE1(OFF) \
	MOVWLZX   (R10), AX; \
	VMOVD     AX, X2; \
	VCVTPH2PS X2, X2; \
	VMULSS    (R12), X2, X2; \
	VMOVSS    X2, OFF(BX)

// KERNEL32_2(WORDS, LONE, QS): the kernel of a 32-value type of QS bytes of values per
// block. R13 counts chunks of 8 blocks, then the pairs past them.
#define KERNEL32_2(WORDS, LONE, QS) \
	MOVQ y+0(FP), DI; \
	MOVQ w+8(FP), SI; \
	MOVQ rows+24(FP), CX; \
	MOVQ a+32(FP), DX; \
	MOVQ n+40(FP), R8; \
	LEAQ scales-32(SP), BX; \
row: \
	MOVQ   SI, R9; \
	IMUL3Q $QS, R8, R10; \
	ADDQ   SI, R10; \
	MOVQ   DX, R11; \
	MOVQ   R8, R12; \
	SHLQ   $6, R12; \
	ADDQ   DX, R12; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	MOVQ   R8, R13; \
	SHRQ   $3, R13; \
	JZ     tail; \
chunk: \
	SCALES8; \
	WORDS(0); PAIR2(0, 0(BX), 4(BX)); \
	WORDS(2*QS); PAIR2(128, 8(BX), 12(BX)); \
	WORDS(4*QS); PAIR2(256, 16(BX), 20(BX)); \
	WORDS(6*QS); PAIR2(384, 24(BX), 28(BX)); \
	ADDQ $(8*QS), R9; \
	ADDQ $512, R11; \
	ADDQ $16, R10; \
	ADDQ $32, R12; \
	DECQ R13; \
	JNZ  chunk; \
tail: \
	MOVQ R8, R13; \
	ANDQ $7, R13; \
	SHRQ $1, R13; \
	JZ   lone; \
pair: \
	SCALE1(0); \
	ADDQ $2, R10; \
	ADDQ $4, R12; \
	SCALE1(4); \
	ADDQ $2, R10; \
	ADDQ $4, R12; \
	WORDS(0); PAIR2(0, 0(BX), 4(BX)); \
	ADDQ $(2*QS), R9; \
	ADDQ $128, R11; \
	DECQ R13; \
	JNZ  pair; \
lone: \
	TESTQ $1, R8; \
	JZ    done; \
	SCALE1(0); \
	LONE; \
	LONE2(0, 0(BX)); \
done: \
	COMBINE2(Y8, Y9, (DI)); \
	ADDQ $4, DI; \
	ADDQ wstride+16(FP), SI; \
	DECQ CX; \
	JNZ  row; \
	VZEROUPPER; \
	RET

// func dotQ8_0AVX2(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $32-48
	KERNEL32_2(Q8_0WORDS2, Q8_0LONE2, 32)
