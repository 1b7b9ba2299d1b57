//go:build amd64 && !noasm

#include "textflag.h"

// AVX-512 (F, BW, VL, VNNI) kernel of Dot for the ungrouped Q8_0 rows, one weight row
// after another against one row of 16-bit quantized activations:
//
//	func dotQ8_0AVX512(y *float32, w *byte, wstride, rows int, a *byte, n int)
//
// y[o] = Dot's reference for weight row o (at w + o·wstride) and the activations at a,
// o = 0..rows-1, where n ≥ 1 is the row's 32-value blocks and rows ≥ 1. Weights are
// widened to 16-bit words and multiplied with the activations in pairs (VPMADDWD, or
// VPDPWSSD accumulating); the integers are exact, so their order is free, and the f32
// operations follow the reference loop one for one.
//
// Registers: DI y, SI the weight row, CX rows left, DX a, R8 n; per row R9 the weights,
// R11 the activations' values, R12 their scales; AX, BX, R10, R13-R15 as the kernel says.

// COMBINE16(OUT): OUT (a memory operand) = combine16 of the 16 lanes of Z30: lanes l and
// l+8, then the horizontal-add tree ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)). Clobbers Z0, Z1.
#define COMBINE16(OUT) \
	VEXTRACTF64X4 $1, Z30, Y1; \
	VADDPS        Y1, Y30, Y0; \
	VEXTRACTF128  $1, Y0, X1; \
	VADDPS        X1, X0, X0; \
	VMOVHLPS      X0, X0, X1; \
	VADDPS        X1, X0, X0; \
	VMOVSHDUP     X0, X1; \
	VADDSS        X1, X0, X0; \
	VMOVSS        X0, OUT

// The 32-value types work on pairs of blocks laid out as pairLayout says: 32 weights
// widened to words in Z3 (values 0-15 of both blocks) and Z4 (values 16-31) meet the pair's
// 128 bytes of activations in VPMADDWD and VPDPWSSD, which leave block 2k's 8 quad sums in
// lanes 0-7 of Z5 and 2k+1's in lanes 8-15 (each exact and below 2^24 in magnitude, so
// exact in f32 too); they are scaled by float32(dw·da) of their block and added to the
// accumulator Z30. A chunk of 16 blocks first computes its 16 scales into Z2, which
// Z16+k spreads over the lanes of pair k.

// pairIdx<>+64k: VPERMPS indices spreading scales 2k and 2k+1 over lanes 0-7 and 8-15.
#define PAIRIDX(K) \
	DATA pairIdx<>+(64*K+0)(SB)/8, $((2*K)*0x100000001); \
	DATA pairIdx<>+(64*K+8)(SB)/8, $((2*K)*0x100000001); \
	DATA pairIdx<>+(64*K+16)(SB)/8, $((2*K)*0x100000001); \
	DATA pairIdx<>+(64*K+24)(SB)/8, $((2*K)*0x100000001); \
	DATA pairIdx<>+(64*K+32)(SB)/8, $((2*K+1)*0x100000001); \
	DATA pairIdx<>+(64*K+40)(SB)/8, $((2*K+1)*0x100000001); \
	DATA pairIdx<>+(64*K+48)(SB)/8, $((2*K+1)*0x100000001); \
	DATA pairIdx<>+(64*K+56)(SB)/8, $((2*K+1)*0x100000001)
PAIRIDX(0)
PAIRIDX(1)
PAIRIDX(2)
PAIRIDX(3)
PAIRIDX(4)
PAIRIDX(5)
PAIRIDX(6)
PAIRIDX(7)
GLOBL pairIdx<>(SB), RODATA|NOPTR, $512

DATA dwords2<>+0(SB)/4, $2
GLOBL dwords2<>(SB), RODATA|NOPTR, $4

// PAIRTERM(AOFF, IDX) finishes a pair whose words are in Z3 and Z4, its activations at
// AOFF(R11), IDX spreading its scales from Z2: Z30 += scales·quads.
#define PAIRTERM(AOFF, IDX) \
	VPMADDWD  AOFF(R11), Z3, Z5; \
	VPDPWSSD  (AOFF+64)(R11), Z4, Z5; \
	VCVTDQ2PS Z5, Z5; \
	VPERMPS   Z2, IDX, Z6; \
	VMULPS    Z6, Z5, Z5; \
	VADDPS    Z5, Z30, Z30

// Q8_0WORDS(WOFF): pair layout weights at WOFF(R9), int8, sign-extended.
#define Q8_0WORDS(WOFF) \
	PREFETCHT0 (WOFF+2048)(R9); \
	VPMOVSXBW WOFF(R9), Z3; \
	VPMOVSXBW (WOFF+32)(R9), Z4

// Q8_0LONE: the words of a last block without a partner, 16 values each in Y3 and Y4 (the
// rest of Z3, Z4 zero).
#define Q8_0LONE \
	VPMOVSXBW (R9), Y3; \
	VPMOVSXBW 16(R9), Y4

// KERNEL32(WORDS, LONE, QS) is the kernel of a 32-value type whose blocks' values take QS
// bytes and are widened two blocks at a time by WORDS, a lone last block by LONE. R13
// counts chunks, then the pairs past them; K1 masks the blocks past the chunks, K2 the
// lanes of a lone block.
#define KERNEL32(WORDS, LONE, QS) \
	MOVQ         y+0(FP), DI; \
	MOVQ         w+8(FP), SI; \
	MOVQ         rows+24(FP), CX; \
	MOVQ         a+32(FP), DX; \
	MOVQ         n+40(FP), R8; \
	VPBROADCASTD dwords2<>(SB), Z14; \
	VMOVDQU32    pairIdx<>+0(SB), Z16; \
	VMOVDQU32    pairIdx<>+64(SB), Z17; \
	VMOVDQU32    pairIdx<>+128(SB), Z18; \
	VMOVDQU32    pairIdx<>+192(SB), Z19; \
	VMOVDQU32    pairIdx<>+256(SB), Z20; \
	VMOVDQU32    pairIdx<>+320(SB), Z21; \
	VMOVDQU32    pairIdx<>+384(SB), Z22; \
	VMOVDQU32    pairIdx<>+448(SB), Z23; \
	MOVQ         R8, AX; \
	ANDQ         $15, AX; \
	MOVQ         $-1, BX; \
	BZHIQ        AX, BX, BX; \
	KMOVQ        BX, K1; \
	MOVL         $0xff, BX; \
	KMOVQ        BX, K2; \
row: \
	MOVQ   SI, R9; \
	IMUL3Q $QS, R8, R10; \
	ADDQ   SI, R10; \
	MOVQ   DX, R11; \
	MOVQ   R8, R12; \
	SHLQ   $6, R12; \
	ADDQ   DX, R12; \
	VPXORD Z30, Z30, Z30; \
	MOVQ   R8, R13; \
	SHRQ   $4, R13; \
	JZ     tail; \
chunk: \
	VCVTPH2PS (R10), Z2; \
	VMULPS    (R12), Z2, Z2; \
	WORDS(0); PAIRTERM(0, Z16); \
	WORDS(2*QS); PAIRTERM(128, Z17); \
	WORDS(4*QS); PAIRTERM(256, Z18); \
	WORDS(6*QS); PAIRTERM(384, Z19); \
	WORDS(8*QS); PAIRTERM(512, Z20); \
	WORDS(10*QS); PAIRTERM(640, Z21); \
	WORDS(12*QS); PAIRTERM(768, Z22); \
	WORDS(14*QS); PAIRTERM(896, Z23); \
	ADDQ $(16*QS), R9; \
	ADDQ $1024, R11; \
	ADDQ $32, R10; \
	ADDQ $64, R12; \
	DECQ R13; \
	JNZ  chunk; \
tail: \
	MOVQ R8, R13; \
	ANDQ $15, R13; \
	JZ   done; \
	VMOVDQU16.Z (R10), K1, Y2; \
	VCVTPH2PS   Y2, Z2; \
	VMOVUPS.Z   (R12), K1, Z7; \
	VMULPS      Z7, Z2, Z2; \
	VMOVDQA32   Z16, Z15; \
	SHRQ        $1, R13; \
	JZ          lone; \
pair: \
	WORDS(0); PAIRTERM(0, Z15); \
	VPADDD Z14, Z15, Z15; \
	ADDQ   $(2*QS), R9; \
	ADDQ   $128, R11; \
	DECQ   R13; \
	JNZ    pair; \
lone: \
	TESTQ $1, R8; \
	JZ    done; \
	LONE; \
	VPMADDWD  (R11), Y3, Y5; \
	VPDPWSSD  32(R11), Y4, Y5; \
	VCVTDQ2PS Z5, Z5; \
	VPERMPS   Z2, Z15, Z6; \
	VMULPS    Z6, Z5, Z5; \
	VADDPS    Z5, Z30, K2, Z30; \
done: \
	COMBINE16((DI)); \
	ADDQ $4, DI; \
	ADDQ wstride+16(FP), SI; \
	DECQ CX; \
	JNZ  row; \
	VZEROUPPER; \
	RET

// func dotQ8_0AVX512(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ8_0AVX512(SB), NOSPLIT, $0-48
	KERNEL32(Q8_0WORDS, Q8_0LONE, 32)
