//go:build amd64 && !noasm

#include "textflag.h"

// AVX-512 (F, BW, VL, VNNI) kernels of Dot, one weight row after another against one row
// of 16-bit quantized activations:
//
//	func dot<T>AVX512(y *float32, w *byte, wstride, rows int, a *byte, n int)
//
// y[o] = Dot's reference for weight row o (at w + o·wstride) and the activations at a,
// o = 0..rows-1, where n ≥ 1 is the row's blocks (of 32 values for Q8_0, 256 for
// the K-quants) and rows ≥ 1. Weights are widened to 16-bit words and multiplied with the
// activations in pairs (VPMADDWD, or VPDPWSSD accumulating); the integers are exact, so
// their order is free, and the f32 operations follow the reference loop one for one.
//
// Registers common to the kernels: DI y, SI the weight row, CX rows left, DX a, R8 n; per
// row R9 the weights, R11 the activations' values, R12 their scales; AX, BX, R10, R13-R15
// as each kernel says.

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

// Grouped Q4_0 (see pack.go): for each block of a group of 16 rows, each quad's 32 bytes
// spread into 64 (low nibbles: rows 0-7, high: rows 8-15; four values a row) meet the
// quad's four activations of each plane, broadcast, in VPDPBUSD, whose lane r gathers row
// r; after the block's 8 quads, isum_r = 256·hi + lo - 8·s (exact: below 2^25) is scaled by
// float32(dw_r·da) and added to row r's sum in lane r of Z30, block after block.
//
//	func dotQ4_0GroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)
//
// Registers: DI y, SI the group, CX groups left, DX a, R8 n; per group R9 the block, R11
// the activations' planes, R12 their scales, R13 their sums, R14 blocks left.

#define G4QUAD(Q) \
	VMOVDQU32     (32*(Q))(R9), Y16; \
	VPSRLW        $4, Y16, Y17; \
	VINSERTI64X4  $1, Y17, Z16, Z16; \
	VPANDD        Z29, Z16, Z16; \
	VPDPBUSD.BCST (4*(Q))(R11), Z16, Z0; \
	VPDPBUSD.BCST (32+4*(Q))(R11), Z16, Z1

TEXT ·dotQ4_0GroupsAVX512(SB), NOSPLIT, $0-40
	MOVQ         y+0(FP), DI
	MOVQ         w+8(FP), SI
	MOVQ         groups+16(FP), CX
	MOVQ         a+24(FP), DX
	MOVQ         n+32(FP), R8
	VPBROADCASTD gbytes0f<>(SB), Z29

g4group:
	MOVQ   SI, R9
	MOVQ   DX, R11
	MOVQ   R8, R12
	SHLQ   $6, R12
	ADDQ   DX, R12
	LEAQ   (R12)(R8*4), R13
	MOVQ   R8, R14
	VPXORD Z30, Z30, Z30

g4block:
	PREFETCHT0   2048(R9)
	PREFETCHT0   2112(R9)
	PREFETCHT0   2176(R9)
	PREFETCHT0   2240(R9)
	PREFETCHT0   2304(R9)
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	G4QUAD(0)
	G4QUAD(1)
	G4QUAD(2)
	G4QUAD(3)
	G4QUAD(4)
	G4QUAD(5)
	G4QUAD(6)
	G4QUAD(7)
	VPSLLD       $8, Z1, Z1
	VPADDD       Z1, Z0, Z0
	VPBROADCASTD (R13), Z2
	VPSLLD       $3, Z2, Z2
	VPSUBD       Z2, Z0, Z0
	VCVTDQ2PS    Z0, Z0
	VCVTPH2PS    256(R9), Z3
	VMULPS.BCST  (R12), Z3, Z3
	VMULPS       Z3, Z0, Z0
	VADDPS       Z0, Z30, Z30
	ADDQ         $288, R9
	ADDQ         $64, R11
	ADDQ         $4, R12
	ADDQ         $4, R13
	DECQ         R14
	JNZ          g4block
	VMOVUPS      Z30, (DI)
	ADDQ         $64, DI
	MOVQ         R9, SI
	DECQ         CX
	JNZ          g4group
	VZEROUPPER
	RET

DATA gbytes0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL gbytes0f<>(SB), RODATA|NOPTR, $4

// The K-quants: a super-block's activations are two planes of signed bytes (q = 256·hi +
// lo, see Acts16x256). Its weights, spread into 64-byte registers in value order (the
// values of sub-blocks 2c and 2c+1 of Q4_K/Q5_K, or 4 of Q6_K's 16-value groups), meet each
// plane in VPMADDUBSW (u8 × s8 into 16-bit pairs, at most 2·63·128 in magnitude), and
// VPDPWSSD multiplies the pairs by their sub-block's scale into int32 lanes: lane l gathers
// values 4l..4l+3 of every 64, the reference's lane[l], in one accumulator per plane and
// parity of the register (Z8, Z10: lo; Z9, Z11: hi). The lanes' exact 256·hi + lo, the
// mins' lanes, their scaling and their f32 sum into Z30 follow the reference, and Z30 is
// combined at the end of the row as the 32-value types' accumulator is.

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

// WORDS4(NAME, OFF, A, B, C, D) fills 64 bytes at NAME+OFF: 8 words each of A, B, C, D.
#define WORDS4(NAME, OFF, A, B, C, D) \
	DATA NAME+(OFF+0)(SB)/8, $(A*0x0001000100010001); \
	DATA NAME+(OFF+8)(SB)/8, $(A*0x0001000100010001); \
	DATA NAME+(OFF+16)(SB)/8, $(B*0x0001000100010001); \
	DATA NAME+(OFF+24)(SB)/8, $(B*0x0001000100010001); \
	DATA NAME+(OFF+32)(SB)/8, $(C*0x0001000100010001); \
	DATA NAME+(OFF+40)(SB)/8, $(C*0x0001000100010001); \
	DATA NAME+(OFF+48)(SB)/8, $(D*0x0001000100010001); \
	DATA NAME+(OFF+56)(SB)/8, $(D*0x0001000100010001)

// subPairs<>+64c: VPERMW indices putting sub-block 2c's scale on the pairs of values
// 64c..64c+31 and 2c+1's on the next 32 (Q4_K, Q5_K).
WORDS2(subPairs<>, 0, 0, 1)
WORDS2(subPairs<>, 64, 2, 3)
WORDS2(subPairs<>, 128, 4, 5)
WORDS2(subPairs<>, 192, 6, 7)
GLOBL subPairs<>(SB), RODATA|NOPTR, $256

// fifthBit<>+64c: word shifts bringing bit 2c (first 32 bytes) and 2c+1 (last 32) of qh
// to bit 0.
WORDS2(fifthBit<>, 0, 0, 1)
WORDS2(fifthBit<>, 64, 2, 3)
WORDS2(fifthBit<>, 128, 4, 5)
WORDS2(fifthBit<>, 192, 6, 7)
GLOBL fifthBit<>(SB), RODATA|NOPTR, $256

// groups16<>+64k: VPERMW indices putting 16-value group 4k+i's scale on the pairs of
// values 64k+16i.. (Q6_K).
WORDS4(groups16<>, 0, 0, 1, 2, 3)
WORDS4(groups16<>, 64, 4, 5, 6, 7)
WORDS4(groups16<>, 128, 8, 9, 10, 11)
WORDS4(groups16<>, 192, 12, 13, 14, 15)
GLOBL groups16<>(SB), RODATA|NOPTR, $256

// q6High<>: word shifts bringing qh's bit pairs 0 and 2 (first 32 bytes, last 32) to bits
// 0-1; +64: bit pairs 4 and 6.
WORDS2(q6High<>, 0, 0, 2)
WORDS2(q6High<>, 64, 4, 6)
GLOBL q6High<>(SB), RODATA|NOPTR, $128

// SCALESK4 decodes the 12 scale bytes at 4(R9) of a Q4_K/Q5_K super-block (llama.cpp's
// get_scale_min_k4) into Y21 as 16 words: the 8 sub-block scales, then the 8 mins. With
// a = bytes 0-3, b = 4-7, c = 8-11: scales 0-3 = a&63, mins 0-3 = b&63, scales 4-7 = c&15 |
// (a>>6)<<4, mins 4-7 = c>>4 | (b>>6)<<4. Clobbers X2-X5.
#define SCALESK4 \
	VMOVDQU    4(R9), X2; \
	VPANDD     X27, X2, X3; \
	VPSRLW     $6, X2, X4; \
	VPANDD     X24, X4, X4; \
	VPSLLW     $4, X4, X4; \
	VPSHUFD    $0xaa, X2, X5; \
	VPSRLVD    cShift<>(SB), X5, X5; \
	VPANDD     X29, X5, X5; \
	VPORD      X4, X5, X5; \
	VPUNPCKLDQ X5, X3, X3; \
	VPMOVZXBW  X3, Y21

// cShift<>: the shifts of c for scales 4-7 (0) and mins 4-7 (4).
DATA cShift<>+0(SB)/8, $0x0000000400000000
DATA cShift<>+8(SB)/8, $0
GLOBL cShift<>(SB), RODATA|NOPTR, $16

// minPairs<>: VPERMW indices 8,8,9,9,…,15,15: lane l's min m_{l/2} (words 8.. of Y21).
DATA minPairs<>+0(SB)/8, $0x0009000900080008
DATA minPairs<>+8(SB)/8, $0x000b000b000a000a
DATA minPairs<>+16(SB)/8, $0x000d000d000c000c
DATA minPairs<>+24(SB)/8, $0x000f000f000e000e
GLOBL minPairs<>(SB), RODATA|NOPTR, $32

DATA bytes3f<>+0(SB)/4, $0x3f3f3f3f
GLOBL bytes3f<>(SB), RODATA|NOPTR, $4

// PLANES(AOFF, V, S, ACCL, ACCH): the 64 values in V (bytes) meet activations AOFF.. of
// both planes, their pairs scaled by the words of S into ACCL and ACCH.
#define PLANES(AOFF, V, S, ACCL, ACCH) \
	VPMADDUBSW AOFF(R11), V, Z17; \
	VPMADDUBSW (256+AOFF)(R11), V, Z18; \
	VPDPWSSD   S, Z17, ACCL; \
	VPDPWSSD   S, Z18, ACCH

#define ACCZERO \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11

// LANES leaves the lanes' exact 256·hi + lo, as f32, in Z8.
#define LANES \
	VPADDD    Z10, Z8, Z8; \
	VPADDD    Z11, Z9, Z9; \
	VPSLLD    $8, Z9, Z9; \
	VPADDD    Z9, Z8, Z8; \
	VCVTDQ2PS Z8, Z8

// SBTERM(DD, DM, MINS): Z30 += float32(DD·lanes) - float32(DM·mins), MINS int32 lanes
// (clobbered), DD and DM broadcast scales.
#define SBTERM(DD, DM, MINS) \
	LANES; \
	VMULPS    DD, Z8, Z8; \
	VCVTDQ2PS MINS, MINS; \
	VMULPS    DM, MINS, MINS; \
	VSUBPS    MINS, Z8, Z8; \
	VADDPS    Z8, Z30, Z30

// K4VALUES(OFF) spreads the 32 bytes at OFF(R9) over Z16 as 64 values in order: the low
// nibbles, then the high ones (Z29: 0x0f bytes).
#define K4VALUES(OFF) \
	VMOVDQU32    OFF(R9), Y16; \
	VPSRLW       $4, Y16, Y17; \
	VINSERTI64X4 $1, Y17, Z16, Z16; \
	VPANDD       Z29, Z16, Z16

// K5FIFTH(C) ORs chunk C's fifth bits (from qh in Z22) into the values in Z16 (Z26: 0x01
// bytes).
#define K5FIFTH(C) \
	VPSRLVW fifthBit<>+(64*(C))(SB), Z22, Z19; \
	VPANDD  Z26, Z19, Z19; \
	VPSLLW  $4, Z19, Z19; \
	VPORD   Z19, Z16, Z16

// K4CHUNK(C, ACCL, ACCH) multiplies chunk C's values (Z16) with the activations and adds
// them, scaled by sub-blocks 2C and 2C+1.
#define K4CHUNK(C, ACCL, ACCH) \
	VMOVDQU16 subPairs<>+(64*(C))(SB), Z19; \
	VPERMW    Z21, Z19, Z19; \
	PLANES(64*(C), Z16, Z19, ACCL, ACCH)

// K4TERM adds the super-block's lanes to Z30: dd = float32(da·d), dm = float32(da·dmin)
// (d, dmin the f16 pair at 0(R9), da at (R12)), mins m_{l/2}·g_l (g at (R13)).
#define K4TERM \
	VMOVD        0(R9), X4; \
	VCVTPH2PS    X4, X4; \
	VMULPS.BCST  (R12), X4, X4; \
	VBROADCASTSS X4, Z6; \
	VMOVSHDUP    X4, X7; \
	VBROADCASTSS X7, Z7; \
	VPERMW       Y21, Y25, Y3; \
	VPMOVZXWD    Y3, Z3; \
	VPMULLD      (R13), Z3, Z3; \
	SBTERM(Z6, Z7, Z3)

// KARGS loads the arguments and the constants of the K-quant kernels; KROW sets up a row
// (R11 the activations' planes, R12 their scales, R13 their sums, R14 the super-blocks,
// Z30 the lanes' sums); KNEXT steps to the next super-block of BB bytes.
#define KARGS \
	MOVQ         y+0(FP), DI; \
	MOVQ         w+8(FP), SI; \
	MOVQ         rows+24(FP), CX; \
	MOVQ         a+32(FP), DX; \
	MOVQ         n+40(FP), R8; \
	VPBROADCASTD bytes0f<>(SB), Z29; \
	VPBROADCASTD bytes3f<>(SB), Z27; \
	VPBROADCASTD bytes03<>(SB), Z24; \
	VPBROADCASTD bytes01<>(SB), Z26; \
	VMOVDQU16    minPairs<>(SB), Y25

#define KROW \
	MOVQ   SI, R9; \
	MOVQ   DX, R11; \
	MOVQ   R8, R12; \
	SHLQ   $9, R12; \
	ADDQ   DX, R12; \
	LEAQ   (R12)(R8*4), R13; \
	VPXORD Z30, Z30, Z30; \
	MOVQ   R8, R14

#define KNEXT(BB) \
	ADDQ $BB, R9; \
	ADDQ $512, R11; \
	ADDQ $4, R12; \
	ADDQ $64, R13; \
	DECQ R14

#define KROWEND \
	COMBINE16((DI)); \
	ADDQ $4, DI; \
	ADDQ wstride+16(FP), SI; \
	DECQ CX

// func dotQ4_KAVX512(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ4_KAVX512(SB), NOSPLIT, $0-48
	KARGS

q4krow:
	KROW

q4ksb:
	PREFETCHT0 1024(R9)
	SCALESK4
	ACCZERO
	K4VALUES(16)
	K4CHUNK(0, Z8, Z9)
	K4VALUES(48)
	K4CHUNK(1, Z10, Z11)
	K4VALUES(80)
	K4CHUNK(2, Z8, Z9)
	K4VALUES(112)
	K4CHUNK(3, Z10, Z11)
	K4TERM
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
	ACCZERO
	VBROADCASTI64X4 16(R9), Z22
	K4VALUES(48)
	K5FIFTH(0)
	K4CHUNK(0, Z8, Z9)
	K4VALUES(80)
	K5FIFTH(1)
	K4CHUNK(1, Z10, Z11)
	K4VALUES(112)
	K5FIFTH(2)
	K4CHUNK(2, Z8, Z9)
	K4VALUES(144)
	K5FIFTH(3)
	K4CHUNK(3, Z10, Z11)
	K4TERM
	KNEXT(176)
	JNZ q5ksb
	KROWEND
	JNZ q5krow
	VZEROUPPER
	RET

// Q6_K: the stored values u (0..63) are 32 above the signed ones; lane l's correction is
// 32·sc_l·g_l, scaled as the lanes are.

// Q6HALF(H) builds the 128 values of half H from ql at 64H(R9) and qh at 128+32H(R9),
// values 128H+0..63 in Z19 and 128H+64..127 in Z16, and accumulates them (Y21: the 16
// scales as words).
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
	VMOVDQU16       groups16<>+(64*(2*(H)))(SB), Z22; \
	VPERMW          Z21, Z22, Z22; \
	PLANES(128*(H), Z19, Z22, Z8, Z9); \
	VMOVDQU16       groups16<>+(64*(2*(H)+1))(SB), Z22; \
	VPERMW          Z21, Z22, Z22; \
	PLANES(128*(H)+64, Z16, Z22, Z10, Z11)

// func dotQ6_KAVX512(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ6_KAVX512(SB), NOSPLIT, $0-48
	KARGS

q6krow:
	KROW

q6ksb:
	PREFETCHT0   1024(R9)
	PREFETCHT0   1088(R9)
	VPMOVSXBW    192(R9), Y21
	ACCZERO
	Q6HALF(0)
	Q6HALF(1)
	VPINSRW      $0, 208(R9), X4, X4
	VCVTPH2PS    X4, X4
	VMULSS       (R12), X4, X4
	VBROADCASTSS X4, Z6
	VPMOVSXWD    Y21, Z3
	VPMULLD      (R13), Z3, Z3
	VPSLLD       $5, Z3, Z3
	SBTERM(Z6, Z6, Z3)
	KNEXT(210)
	JNZ q6ksb
	KROWEND
	JNZ q6krow
	VZEROUPPER
	RET
