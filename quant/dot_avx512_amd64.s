//go:build amd64 && !noasm

#include "textflag.h"

// AVX-512 (F, BW, VL, VNNI) kernels of Dot, one weight row after another against one row
// of 16-bit quantized activations:
//
//	func dot<T>AVX512(y *float32, w *byte, wstride, rows int, a *byte, n int)
//
// y[o] = Dot's reference for weight row o (at w + o·wstride) and the activations at a,
// o = 0..rows-1, where n ≥ 1 is the row's blocks (of 32 values for Q8_0 and Q4_0, 256 for
// the K-quants) and rows ≥ 1. Weights are widened to 16-bit words and multiplied with the
// activations in pairs (VPMADDWD, or VPDPWSSD accumulating); the integers are exact, so
// their order is free, and the f32 operations follow the reference loop one for one.
//
// Registers common to the kernels: DI y, SI the weight row, CX rows left, DX a, R8 n; per
// row R9 the weights, R11 the activations' values, R12 their scales; AX, BX, R10, R13-R15
// as each kernel says.

DATA words000f<>+0(SB)/4, $0x000f000f
GLOBL words000f<>(SB), RODATA|NOPTR, $4
DATA words0008<>+0(SB)/4, $0x00080008
GLOBL words0008<>(SB), RODATA|NOPTR, $4
DATA words0020<>+0(SB)/4, $0x00200020
GLOBL words0020<>(SB), RODATA|NOPTR, $4
DATA bytes0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL bytes0f<>(SB), RODATA|NOPTR, $4
DATA bytes01<>+0(SB)/4, $0x01010101
GLOBL bytes01<>(SB), RODATA|NOPTR, $4
DATA bytes03<>+0(SB)/4, $0x03030303
GLOBL bytes03<>(SB), RODATA|NOPTR, $4

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

// Q4_0WORDS(WOFF): two blocks' 16 bytes of nibbles at WOFF(R9), value i in the low nibble
// of byte i and i+16 in its high nibble, minus 8 (Z28: 0x000f words, Z27: 8s).
#define Q4_0WORDS(WOFF) \
	PREFETCHT0 (WOFF+2048)(R9); \
	VPMOVZXBW WOFF(R9), Z3; \
	VPSRLW    $4, Z3, Z4; \
	VPANDD    Z28, Z3, Z3; \
	VPSUBW    Z27, Z3, Z3; \
	VPSUBW    Z27, Z4, Z4

// Q8_0LONE, Q4_0LONE: the words of a last block without a partner, 16 values each in Y3
// and Y4 (the rest of Z3, Z4 zero).
#define Q8_0LONE \
	VPMOVSXBW (R9), Y3; \
	VPMOVSXBW 16(R9), Y4

#define Q4_0LONE \
	VPMOVZXBW (R9), Y3; \
	VPSRLW    $4, Y3, Y4; \
	VPANDD    Y28, Y3, Y3; \
	VPSUBW    Y27, Y3, Y3; \
	VPSUBW    Y27, Y4, Y4

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

// func dotQ4_0AVX512(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ4_0AVX512(SB), NOSPLIT, $0-48
	VPBROADCASTD words000f<>(SB), Z28
	VPBROADCASTD words0008<>(SB), Z27
	KERNEL32(Q4_0WORDS, Q4_0LONE, 16)

// The K-quants: each super-block's weights are widened to words, multiplied by their
// sub-block's scale (a word: 6-bit scale × 4- or 5-bit value ≤ 1953, int8 scale × 6-bit
// value ≤ 4096 in magnitude) and accumulated with the activations in int32 lanes by
// VPDPWSSD (the lanes of all accumulators together stay below 2^31: 16 products of at most
// 4096·32767 each). Their
// exact sum is taken in f64 (below 2^53) and rounded once to f32, as float32(isum) of the
// reference; the super-block's term is added to the row's sum X28, block after block.

// WORDSHUF(J): VPSHUFB control broadcasting word J of each 128-bit lane over the lane.
#define WORDSHUF(J) \
	DATA wordShuf<>+(64*J+0)(SB)/8, $((2*J)*0x0101010101010101+0x0100010001000100); \
	DATA wordShuf<>+(64*J+8)(SB)/8, $((2*J)*0x0101010101010101+0x0100010001000100); \
	DATA wordShuf<>+(64*J+16)(SB)/8, $((2*J)*0x0101010101010101+0x0100010001000100); \
	DATA wordShuf<>+(64*J+24)(SB)/8, $((2*J)*0x0101010101010101+0x0100010001000100); \
	DATA wordShuf<>+(64*J+32)(SB)/8, $((2*J)*0x0101010101010101+0x0100010001000100); \
	DATA wordShuf<>+(64*J+40)(SB)/8, $((2*J)*0x0101010101010101+0x0100010001000100); \
	DATA wordShuf<>+(64*J+48)(SB)/8, $((2*J)*0x0101010101010101+0x0100010001000100); \
	DATA wordShuf<>+(64*J+56)(SB)/8, $((2*J)*0x0101010101010101+0x0100010001000100)
WORDSHUF(0)
WORDSHUF(1)
WORDSHUF(2)
WORDSHUF(3)
WORDSHUF(4)
WORDSHUF(5)
WORDSHUF(6)
WORDSHUF(7)
GLOBL wordShuf<>(SB), RODATA|NOPTR, $512

// WORDS2(NAME, OFF, A, B) fills 64 bytes at NAME+OFF: 16 words A, then 16 words B.
#define WORDS2(NAME, OFF, A, B) \
	DATA NAME+(OFF+0)(SB)/8, $(A*0x0001000100010001); \
	DATA NAME+(OFF+8)(SB)/8, $(A*0x0001000100010001); \
	DATA NAME+(OFF+16)(SB)/8, $(A*0x0001000100010001); \
	DATA NAME+(OFF+24)(SB)/8, $(A*0x0001000100010001); \
	DATA NAME+(OFF+32)(SB)/8, $(B*0x0001000100010001); \
	DATA NAME+(OFF+40)(SB)/8, $(B*0x0001000100010001); \
	DATA NAME+(OFF+48)(SB)/8, $(B*0x0001000100010001); \
	DATA NAME+(OFF+56)(SB)/8, $(B*0x0001000100010001)

// groupPairs<>+64k: VPERMW indices putting 16-value groups 2k and 2k+1's scales on words
// 0-15 and 16-31 (Q6_K, values 32k..32k+31).
WORDS2(groupPairs<>, 0, 0, 1)
WORDS2(groupPairs<>, 64, 2, 3)
WORDS2(groupPairs<>, 128, 4, 5)
WORDS2(groupPairs<>, 192, 6, 7)
WORDS2(groupPairs<>, 256, 8, 9)
WORDS2(groupPairs<>, 320, 10, 11)
WORDS2(groupPairs<>, 384, 12, 13)
WORDS2(groupPairs<>, 448, 14, 15)
GLOBL groupPairs<>(SB), RODATA|NOPTR, $512

// q6High<>: word shifts bringing qh's bit pairs 0 and 2 (first 32 bytes, last 32) to bits
// 0-1; +64: bit pairs 4 and 6.
WORDS2(q6High<>, 0, 0, 2)
WORDS2(q6High<>, 64, 4, 6)
GLOBL q6High<>(SB), RODATA|NOPTR, $128

// dupIdx<>: VPERMD indices 0,0,1,1,…,7,7 (each sub-block's min over its two 16-value sums).
DATA dupIdx<>+0(SB)/8, $0x0000000000000000
DATA dupIdx<>+8(SB)/8, $0x0000000100000001
DATA dupIdx<>+16(SB)/8, $0x0000000200000002
DATA dupIdx<>+24(SB)/8, $0x0000000300000003
DATA dupIdx<>+32(SB)/8, $0x0000000400000004
DATA dupIdx<>+40(SB)/8, $0x0000000500000005
DATA dupIdx<>+48(SB)/8, $0x0000000600000006
DATA dupIdx<>+56(SB)/8, $0x0000000700000007
GLOBL dupIdx<>(SB), RODATA|NOPTR, $64

// HSUM32(Z, Y, X, R) sums the 16 int32 lanes of Z (Y, X its low half and quarter) into the
// 32-bit register R. Clobbers X1, Y1 and Z.
#define HSUM32(Z, Y, X, R) \
	VEXTRACTI64X4 $1, Z, Y1; \
	VPADDD        Y1, Y, Y; \
	VEXTRACTI32X4 $1, Y, X1; \
	VPADDD        X1, X, X; \
	VPSHUFD       $0x4e, X, X1; \
	VPADDD        X1, X, X; \
	VPSHUFD       $0xb1, X, X1; \
	VPADDD        X1, X, X; \
	VMOVD         X, R

// ISUMF32 rounds the exact sum of Z20's 16 int32 lanes to f32 in X6: the lanes widened to
// f64 and added there, exactly. Clobbers Z4, Z5.
#define ISUMF32 \
	VCVTDQ2PD     Y20, Z4; \
	VEXTRACTI64X4 $1, Z20, Y5; \
	VCVTDQ2PD     Y5, Z5; \
	VADDPD        Z5, Z4, Z4; \
	VEXTRACTF64X4 $1, Z4, Y5; \
	VADDPD        Y5, Y4, Y4; \
	VEXTRACTF128  $1, Y4, X5; \
	VADDPD        X5, X4, X4; \
	VUNPCKHPD     X4, X4, X5; \
	VADDSD        X5, X4, X4; \
	VCVTSD2SS     X4, X4, X6

// SCALESK4 decodes the 12 scale bytes at 4(R9) into the 8 sub-block scales (bytes, X2) and
// mins (bytes, X3) of Q4_K/Q5_K (llama.cpp's get_scale_min_k4, four at a time). Clobbers
// AX, BX, R10, R15.
#define SCALESK4 \
	MOVL    12(R9), R10; \
	MOVL    R10, R15; \
	SHRL    $4, R15; \
	ANDL    $0x0f0f0f0f, R15; \
	ANDL    $0x0f0f0f0f, R10; \
	MOVL    4(R9), AX; \
	MOVL    AX, BX; \
	SHRL    $6, BX; \
	ANDL    $0x03030303, BX; \
	SHLL    $4, BX; \
	ORL     BX, R10; \
	ANDL    $0x3f3f3f3f, AX; \
	VMOVD   AX, X2; \
	VPINSRD $1, R10, X2, X2; \
	MOVL    8(R9), AX; \
	MOVL    AX, BX; \
	SHRL    $6, BX; \
	ANDL    $0x03030303, BX; \
	SHLL    $4, BX; \
	ORL     BX, R15; \
	ANDL    $0x3f3f3f3f, AX; \
	VMOVD   AX, X3; \
	VPINSRD $1, R15, X3, X3

// K4SUB(J, V, ZV, AOFF, ACC) multiplies the 32 values of sub-block J (bytes in Y V) by its
// scale (a word of Z21) and accumulates them with the activations at AOFF(R11) into ACC.
// The super-block's sub-blocks take turns over four accumulators (Z20, Z23, Z30, Z31,
// summed at the end), so that no chain of dependent VPDPWSSDs sets the pace.
#define K4SUB(J, V, ZV, AOFF, ACC) \
	VPMOVZXBW V, ZV; \
	VPSHUFB   wordShuf<>+(64*(J))(SB), Z21, Z18; \
	VPMULLW   Z18, ZV, ZV; \
	VPDPWSSD  AOFF(R11), ZV, ACC

// ACCZERO zeroes the four accumulators; ACCSUM adds them into Z20.
#define ACCZERO \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z23, Z23, Z23; \
	VPXORD Z30, Z30, Z30; \
	VPXORD Z31, Z31, Z31

#define ACCSUM \
	VPADDD Z23, Z20, Z20; \
	VPADDD Z31, Z30, Z30; \
	VPADDD Z30, Z20, Z20

// K4NIBBLES(OFF) splits the 32 bytes at OFF(R9) into the low nibbles (Y17) and the high
// ones (Y16) (Y29: 0x0f bytes).
#define K4NIBBLES(OFF) \
	VMOVDQU32 OFF(R9), Y16; \
	VPANDD    Y29, Y16, Y17; \
	VPSRLW    $4, Y16, Y16; \
	VPANDD    Y29, Y16, Y16

// K5FIFTH(C) ORs the fifth bits of chunk C (bits 2C and 2C+1 of qh in Y22) into Y17 and
// Y16 (Y26: 0x01 bytes).
#define K5FIFTH(C) \
	VPSRLW $(2*(C)), Y22, Y19; \
	VPANDD Y26, Y19, Y19; \
	VPSLLW $4, Y19, Y19; \
	VPORD  Y19, Y17, Y17; \
	VPSRLW $(2*(C)+1), Y22, Y19; \
	VPANDD Y26, Y19, Y19; \
	VPSLLW $4, Y19, Y19; \
	VPORD  Y19, Y16, Y16

// MINSK4 computes Σ_j m_j·(g_2j + g_2j+1) into BX from the mins (bytes, X3) and the
// activations' 16 sums at (R13). Clobbers Z1, Z3.
#define MINSK4 \
	VPMOVZXBD X3, Y3; \
	VPERMD    Z3, Z25, Z3; \
	VPMULLD   (R13), Z3, Z3; \
	HSUM32(Z3, Y3, X3, BX)

// TERMK4 adds float32(float32(da·d)·float32(isum)) - float32(float32(da·dmin)·float32(imin))
// to X28, with float32(isum) in X6, imin in BX, d and dmin the f16 pair at 0(R9), da at
// (R12).
#define TERMK4 \
	VMOVD        0(R9), X4; \
	VCVTPH2PS    X4, X4; \
	VBROADCASTSS (R12), X5; \
	VMULPS       X4, X5, X4; \
	VCVTSI2SSL   BX, X5, X5; \
	VINSERTPS    $0x10, X5, X6, X5; \
	VMULPS       X5, X4, X4; \
	VMOVSHDUP    X4, X5; \
	VSUBSS       X5, X4, X4; \
	VADDSS       X4, X28, X28

// KARGS loads the arguments and the constants of the K-quant kernels; KROW sets up a row
// (R11 the activations' values, R12 their scales, R13 their sums, R14 the super-blocks,
// X28 the sum); KNEXT steps to the next super-block, BB its bytes.
#define KARGS \
	MOVQ         y+0(FP), DI; \
	MOVQ         w+8(FP), SI; \
	MOVQ         rows+24(FP), CX; \
	MOVQ         a+32(FP), DX; \
	MOVQ         n+40(FP), R8; \
	VPBROADCASTD bytes0f<>(SB), Z29; \
	VPBROADCASTD bytes01<>(SB), Z26; \
	VMOVDQU32    dupIdx<>(SB), Z25

#define KROW \
	MOVQ   SI, R9; \
	MOVQ   DX, R11; \
	MOVQ   R8, R12; \
	SHLQ   $9, R12; \
	ADDQ   DX, R12; \
	LEAQ   (R12)(R8*4), R13; \
	VXORPS X28, X28, X28; \
	MOVQ   R8, R14

#define KNEXT(BB) \
	ADDQ $BB, R9; \
	ADDQ $512, R11; \
	ADDQ $4, R12; \
	ADDQ $64, R13; \
	DECQ R14

#define KROWEND \
	VMOVSS X28, (DI); \
	ADDQ   $4, DI; \
	ADDQ   wstride+16(FP), SI; \
	DECQ   CX

// func dotQ4_KAVX512(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ4_KAVX512(SB), NOSPLIT, $0-48
	KARGS

q4krow:
	KROW

q4ksb:
	PREFETCHT0      1024(R9)
	SCALESK4
	VPMOVZXBW       X2, X21
	VSHUFI32X4      $0, Z21, Z21, Z21
	ACCZERO
	K4NIBBLES(16)
	K4SUB(0, Y17, Z17, 0, Z20)
	K4SUB(1, Y16, Z16, 64, Z23)
	K4NIBBLES(48)
	K4SUB(2, Y17, Z17, 128, Z30)
	K4SUB(3, Y16, Z16, 192, Z31)
	K4NIBBLES(80)
	K4SUB(4, Y17, Z17, 256, Z20)
	K4SUB(5, Y16, Z16, 320, Z23)
	K4NIBBLES(112)
	K4SUB(6, Y17, Z17, 384, Z30)
	K4SUB(7, Y16, Z16, 448, Z31)
	ACCSUM
	ISUMF32
	MINSK4
	TERMK4
	KNEXT(144)
	JNZ q4ksb
	KROWEND
	JNZ q4krow
	VZEROUPPER
	RET

// func dotQ5_KAVX512(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ5_KAVX512(SB), NOSPLIT, $0-48
	KARGS

q5krow:
	KROW

q5ksb:
	PREFETCHT0      1024(R9)
	SCALESK4
	VPMOVZXBW       X2, X21
	VSHUFI32X4      $0, Z21, Z21, Z21
	ACCZERO
	VMOVDQU32       16(R9), Y22
	K4NIBBLES(48)
	K5FIFTH(0)
	K4SUB(0, Y17, Z17, 0, Z20)
	K4SUB(1, Y16, Z16, 64, Z23)
	K4NIBBLES(80)
	K5FIFTH(1)
	K4SUB(2, Y17, Z17, 128, Z30)
	K4SUB(3, Y16, Z16, 192, Z31)
	K4NIBBLES(112)
	K5FIFTH(2)
	K4SUB(4, Y17, Z17, 256, Z20)
	K4SUB(5, Y16, Z16, 320, Z23)
	K4NIBBLES(144)
	K5FIFTH(3)
	K4SUB(6, Y17, Z17, 384, Z30)
	K4SUB(7, Y16, Z16, 448, Z31)
	ACCSUM
	ISUMF32
	MINSK4
	TERMK4
	KNEXT(176)
	JNZ q5ksb
	KROWEND
	JNZ q5krow
	VZEROUPPER
	RET

// Q6_K: the stored values u (0..63) are 32 above the signed ones; each 32 values (groups
// 2k and 2k+1) are widened, made signed, scaled and accumulated. Z27: 32s as words, Z24:
// 0x03 bytes.

// Q6CHUNK(K, V, ACC) accumulates values 32K..32K+31 (bytes in Y V) with activations 32K..
// into ACC.
#define Q6CHUNK(K, V, ACC) \
	VPMOVZXBW  V, Z3; \
	VPSUBW     Z27, Z3, Z3; \
	VMOVDQU16  groupPairs<>+(64*(K))(SB), Z18; \
	VPERMW     Z21, Z18, Z18; \
	VPMULLW    Z18, Z3, Z3; \
	VPDPWSSD   (64*(K))(R11), Z3, ACC

// Q6HALF(H) builds the 128 values of half H from ql at 64H(R9) and qh at 128+32H(R9):
// values 128H+0..63 in Z19, 128H+64..127 in Z16, and accumulates them.
#define Q6HALF(H) \
	VMOVDQU32       (64*(H))(R9), Z16; \
	VBROADCASTI64X4 (128+32*(H))(R9), Z17; \
	VPSRLVW         q6High<>(SB), Z17, Z18; \
	VPANDD          Z24, Z18, Z18; \
	VPSLLW          $4, Z18, Z18; \
	VPANDD          Z29, Z16, Z19; \
	VPORD           Z18, Z19, Z19; \
	VPSRLVW         q6High<>+64(SB), Z17, Z18; \
	VPANDD          Z24, Z18, Z18; \
	VPSLLW          $4, Z18, Z18; \
	VPSRLW          $4, Z16, Z16; \
	VPANDD          Z29, Z16, Z16; \
	VPORD           Z18, Z16, Z16; \
	Q6CHUNK(4*(H), Y19, Z20); \
	VEXTRACTI64X4   $1, Z19, Y19; \
	Q6CHUNK(4*(H)+1, Y19, Z23); \
	Q6CHUNK(4*(H)+2, Y16, Z30); \
	VEXTRACTI64X4   $1, Z16, Y16; \
	Q6CHUNK(4*(H)+3, Y16, Z31)

// func dotQ6_KAVX512(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ6_KAVX512(SB), NOSPLIT, $0-48
	KARGS
	VPBROADCASTD bytes03<>(SB), Z24
	VPBROADCASTD words0020<>(SB), Z27

q6krow:
	KROW

q6ksb:
	PREFETCHT0 1024(R9)
	PREFETCHT0 1088(R9)
	VPMOVSXBW  192(R9), Y21
	ACCZERO
	Q6HALF(0)
	Q6HALF(1)
	ACCSUM
	ISUMF32
	VPINSRW    $0, 208(R9), X4, X4
	VCVTPH2PS  X4, X4
	VMULSS     (R12), X4, X4
	VMULSS     X6, X4, X4
	VADDSS     X4, X28, X28
	KNEXT(210)
	JNZ q6ksb
	KROWEND
	JNZ q6krow
	VZEROUPPER
	RET
