//go:build amd64 && !noasm

#include "textflag.h"
#include "blocks_avx512_amd64.h"
#include "gemm_avx512_amd64.h"

// AVX-512 (F, BW, VL, VNNI) GEMM kernels of Dot for Q8_0, Q4_0, Q5_0, Q5_1, Q6_K, Q4_K
// and Q5_K (gemm_amd64.go): one group of 16 weight rows against four rows of activations,
// each weight quad made ready for VPDPBUSD once (Q8_0's bytes made unsigned, Q4_0's and
// Q4_K's nibbles split, the Q5 types' fifth bits added in, Q6_K's high bits rotated in)
// and multiplied with the quad's activations of all four rows:
//
//	func gemm<T>AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
//
// continues y[i·ystride + r] (r = 0..15, i = 0..3; ystride in elements) with blocks 0..n-1
// (n ≥ 1) of the group at w against row i of the activations, whose planes, scales and
// sums of those blocks start at qs, ds and ss + i·astride. Per block and row the integer
// sums and the float operations are those of the GEMV kernels (dot_group_avx512_amd64.s),
// so each output is bitwise the GEMV's, blocks added in order; y holding zeros on the
// first call of a row is the GEMV's zeroed sum. The 32-value types (the GEMM macro): isum =
// FIX(256·hi + lo) - (s << SHIFT), then acc += float32(isum)·float32(dw·da) (MTERM; Q5_1
// without the offset, plus its min's term: M51TERM).
//
// Registers of the 32-value types: DI y, SI ystride in bytes, R15 3·SI, R9 the block, CX
// blocks left, R11 row 0's planes, R12 its scales, R13 its sums, BX astride, R10 3·BX;
// Z0-Z3 the rows' lo sums of the block, Z4-Z7 their hi sums, Z8-Z11 the rows' outputs,
// Z16/Z17 the quad, Z18, Z19, Z21 temps, Z20 the group's dw, Z26 0x10 bytes, Z27 the
// nibbles' shifts, Z28 the byte mask.

// Q8W, Q4W, NIBFIX and NOFIX: gemm_avx512_amd64.h.

// Q5READY(Q, F, T, SH, NIB, B16) makes a Q5 quad ready in T, as the GEMV kernels' Q5QUAD
// does: its 32 bytes of nibbles at Q split into 64 (low nibbles in the low half: rows 0-7,
// high in the high half: rows 8-15; the high half shifted down by SH's words, 0 × 16 | 4 ×
// 16, and masked by NIB's 0x0f bytes), and 16 added to the values whose fifth bit is set
// in the 64-bit mask at F (B16 holding 0x10 bytes).
#define Q5READY(Q, F, T, SH, NIB, B16) \
	VBROADCASTI64X4 Q, T; \
	VPSRLVW         SH, T, T; \
	VPANDD          NIB, T, T; \
	KMOVQ           F, K1; \
	VPADDB          B16, T, K1, T

// Q5W(K, T) makes quad K of a Q5_0 or Q5_1 block (fifth bits at 256) ready in T.
#define Q5W(K, T) Q5READY((32*(K))(R9), (256+8*(K))(R9), T, Z27, Z28, Z26)

// MQUAD(K, W, T) adds quad K of the block, made by W into T, times the quad's activations
// of each of the four rows (lo and hi planes, broadcast) into Z0-Z3 and Z4-Z7.
#define MQUAD(K, W, T) \
	W(K, T); \
	VPDPBUSD.BCST (4*(K))(R11), T, Z0; \
	VPDPBUSD.BCST (32+4*(K))(R11), T, Z4; \
	VPDPBUSD.BCST (4*(K))(R11)(BX*1), T, Z1; \
	VPDPBUSD.BCST (32+4*(K))(R11)(BX*1), T, Z5; \
	VPDPBUSD.BCST (4*(K))(R11)(BX*2), T, Z2; \
	VPDPBUSD.BCST (32+4*(K))(R11)(BX*2), T, Z6; \
	VPDPBUSD.BCST (4*(K))(R11)(R10*1), T, Z3; \
	VPDPBUSD.BCST (32+4*(K))(R11)(R10*1), T, Z7

// MTERM(LO, HI, ACC, IDX, FIX, SHIFT) adds the block's term of the row whose scales and
// sums are at IDX from R12 and R13 into ACC: the GEMV kernels' GTERM.
#define MTERM(LO, HI, ACC, IDX, FIX, SHIFT) \
	VPSLLD       $8, HI, HI; \
	VPADDD       HI, LO, LO; \
	FIX(LO); \
	VPBROADCASTD (R13)IDX, Z18; \
	VPSLLD       $SHIFT, Z18, Z18; \
	VPSUBD       Z18, LO, LO; \
	VCVTDQ2PS    LO, LO; \
	VMULPS.BCST  (R12)IDX, Z20, Z19; \
	VMULPS       Z19, LO, LO; \
	VADDPS       LO, ACC, ACC

// M51TERM(LO, HI, ACC, IDX) adds a Q5_1 block's term of the row at IDX into ACC, the GEMV's:
// float32(dw·da)·float32(256·hi + lo) + float32(m·da)·float32(s), m the rows' mins at 352.
#define M51TERM(LO, HI, ACC, IDX) \
	VPSLLD       $8, HI, HI; \
	VPADDD       HI, LO, LO; \
	VCVTDQ2PS    LO, LO; \
	VMULPS.BCST  (R12)IDX, Z20, Z19; \
	VMULPS       Z19, LO, LO; \
	VCVTPH2PS    352(R9), Z21; \
	VMULPS.BCST  (R12)IDX, Z21, Z21; \
	VPBROADCASTD (R13)IDX, Z18; \
	VCVTDQ2PS    Z18, Z18; \
	VMULPS       Z18, Z21, Z21; \
	VADDPS       Z21, LO, LO; \
	VADDPS       LO, ACC, ACC

// Q5PF(BB) prefetches the Q5_0 or Q5_1 block four blocks ahead (BB bytes a block), K5PF(J)
// an eighth of the Q5_K super-block four ahead at its sub-block J, as the GEMVs do; NOPF
// nothing. Where M is small each weight byte serves one or two tiles, and without them the
// GEMM waits on the weights' stream (0.4-0.7× the GEMV at M = 4, 1.3-2.2× with them:
// docs/benchmarks/decode.md).
#define NOPF(X)
#define Q5PF(BB) PF384(4*(BB))
#define K5PF(J) PF384(4*2816+352*(J))

// PF384(OFF) prefetches the six cache lines of [OFF, OFF+384) of the block.
#define PF384(OFF) \
	PREFETCHT0 (OFF)(R9); \
	PREFETCHT0 (OFF+64)(R9); \
	PREFETCHT0 (OFF+128)(R9); \
	PREFETCHT0 (OFF+192)(R9); \
	PREFETCHT0 (OFF+256)(R9); \
	PREFETCHT0 (OFF+320)(R9)

// The terms of Q8_0 (isum = 256·hi + lo - 128·s, the weights made unsigned, w + 128), Q4_0
// (isum = NIBFIX(256·hi + lo) - 8·s) and Q5_0 (isum = 256·hi + lo - 16·s).
#define Q8TERM(LO, HI, ACC, IDX) MTERM(LO, HI, ACC, IDX, NOFIX, 7)
#define Q4TERM(LO, HI, ACC, IDX) MTERM(LO, HI, ACC, IDX, NIBFIX, 3)
#define Q50TERM(LO, HI, ACC, IDX) MTERM(LO, HI, ACC, IDX, NOFIX, 4)

#define ROW0
#define ROW1 (BX*1)
#define ROW2 (BX*2)
#define ROW3 (R10*1)

// GEMM(W, TERM, BB, D, PF) is a kernel's body for blocks of BB bytes whose scales are at D
// in the block, W making its quads ready, TERM adding a row's term and PF(BB) prefetching.
#define GEMM(W, TERM, BB, D, PF) \
	MOVQ      y+0(FP), DI; \
	MOVQ      ystride+8(FP), SI; \
	SHLQ      $2, SI; \
	LEAQ      (SI)(SI*2), R15; \
	MOVQ      w+16(FP), R9; \
	MOVQ      n+24(FP), CX; \
	MOVQ      qs+32(FP), R11; \
	MOVQ      ds+40(FP), R12; \
	MOVQ      ss+48(FP), R13; \
	MOVQ      astride+56(FP), BX; \
	LEAQ      (BX)(BX*2), R10; \
	VMOVUPS   (DI), Z8; \
	VMOVUPS   (DI)(SI*1), Z9; \
	VMOVUPS   (DI)(SI*2), Z10; \
	VMOVUPS   (DI)(R15*1), Z11; \
block: \
	PF(BB); \
	VPXORD    Z0, Z0, Z0; \
	VPXORD    Z1, Z1, Z1; \
	VPXORD    Z2, Z2, Z2; \
	VPXORD    Z3, Z3, Z3; \
	VPXORD    Z4, Z4, Z4; \
	VPXORD    Z5, Z5, Z5; \
	VPXORD    Z6, Z6, Z6; \
	VPXORD    Z7, Z7, Z7; \
	MQUAD(0, W, Z16); \
	MQUAD(1, W, Z17); \
	MQUAD(2, W, Z16); \
	MQUAD(3, W, Z17); \
	MQUAD(4, W, Z16); \
	MQUAD(5, W, Z17); \
	MQUAD(6, W, Z16); \
	MQUAD(7, W, Z17); \
	VCVTPH2PS D(R9), Z20; \
	TERM(Z0, Z4, Z8, ROW0); \
	TERM(Z1, Z5, Z9, ROW1); \
	TERM(Z2, Z6, Z10, ROW2); \
	TERM(Z3, Z7, Z11, ROW3); \
	ADDQ      $BB, R9; \
	ADDQ      $64, R11; \
	ADDQ      $4, R12; \
	ADDQ      $4, R13; \
	DECQ      CX; \
	JNZ       block; \
	VMOVUPS   Z8, (DI); \
	VMOVUPS   Z9, (DI)(SI*1); \
	VMOVUPS   Z10, (DI)(SI*2); \
	VMOVUPS   Z11, (DI)(R15*1); \
	VZEROUPPER; \
	RET

// func gemmQ8_0AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
TEXT ·gemmQ8_0AVX512(SB), NOSPLIT, $0-64
	VPBROADCASTD gbytes80<>(SB), Z28
	GEMM(Q8W, Q8TERM, 544, 512, NOPF)

// func gemmQ4_0AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
TEXT ·gemmQ4_0AVX512(SB), NOSPLIT, $0-64
	VMOVDQU32 gnibmask<>(SB), Z28
	VMOVDQU32 gnibshift<>(SB), Z27
	GEMM(Q4W, Q4TERM, 288, 256, NOPF)

// The word shifts of Q5READY: 0 in words 0-15, 4 in 16-31.
DATA gemmq5shift<>+0(SB)/8, $0
DATA gemmq5shift<>+8(SB)/8, $0
DATA gemmq5shift<>+16(SB)/8, $0
DATA gemmq5shift<>+24(SB)/8, $0
DATA gemmq5shift<>+32(SB)/8, $0x0004000400040004
DATA gemmq5shift<>+40(SB)/8, $0x0004000400040004
DATA gemmq5shift<>+48(SB)/8, $0x0004000400040004
DATA gemmq5shift<>+56(SB)/8, $0x0004000400040004
GLOBL gemmq5shift<>(SB), RODATA|NOPTR, $64

#define Q5CONST \
	VPBROADCASTD gbytes0f<>(SB), Z28; \
	VPBROADCASTD gbytes10<>(SB), Z26; \
	VMOVDQU32    gemmq5shift<>(SB), Z27

// func gemmQ5_0AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
TEXT ·gemmQ5_0AVX512(SB), NOSPLIT, $0-64
	Q5CONST
	GEMM(Q5W, Q50TERM, 352, 320, Q5PF)

// func gemmQ5_1AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
TEXT ·gemmQ5_1AVX512(SB), NOSPLIT, $0-64
	Q5CONST
	GEMM(Q5W, M51TERM, 384, 320, Q5PF)

// Q6_K: per 16-value group S of a super-block, the quads made ready as the GEMV kernel's
// Q6QUAD does (nibbles split, high bits rotated in: seven instructions a quad, shared by
// the four rows), the planes' sums times the rows' int8 scales added into each row's lo
// and hi sums of the super-block, the scales times the activations' sum g_S into its sum
// term; then per row isum = 256·hi + lo - 32·term, exact in f64 and rounded once to f32,
// times float32(d·da): the GEMV's Q6_K arithmetic, exact integers and one rounding.
//
// Registers (beside the GEMM's DI, SI, R15, R9, CX, R11-R13, BX, R10): Z0-Z7 the rows'
// lo and hi sums of a group (row r: Z2r, Z2r+1), then the finishing's temps; Z8-Z11 the
// rows' lo sums of the super-block, Z12-Z15 their hi sums, Z24-Z27 their sum terms;
// Z28, Z30, Z31, Z21 the rows' outputs; Z16, Z17 the quad; Z18 the group's scales, Z19 a
// temp; Z22 the rotations, Z20 0x30 bytes, Z29 0x0f bytes.

// M6QUAD(K) adds quad K of the super-block times the four rows' activations into Z0-Z7.
#define M6QUAD(K) \
	Q6READY(K); \
	VPDPBUSD.BCST   (4*(K))(R11), Z16, Z0; \
	VPDPBUSD.BCST   (256+4*(K))(R11), Z16, Z1; \
	VPDPBUSD.BCST   (4*(K))(R11)(BX*1), Z16, Z2; \
	VPDPBUSD.BCST   (256+4*(K))(R11)(BX*1), Z16, Z3; \
	VPDPBUSD.BCST   (4*(K))(R11)(BX*2), Z16, Z4; \
	VPDPBUSD.BCST   (256+4*(K))(R11)(BX*2), Z16, Z5; \
	VPDPBUSD.BCST   (4*(K))(R11)(R10*1), Z16, Z6; \
	VPDPBUSD.BCST   (256+4*(K))(R11)(R10*1), Z16, Z7

// M6SCALE(LO, HI, SLO, SHI, STERM, S, IDX) scales one row's group sums by Z18 into its
// super-block sums, and adds the scales times its activations' sum of group S.
#define M6SCALE(LO, HI, SLO, SHI, STERM, S, IDX) \
	VPMULLD      Z18, LO, LO; \
	VPADDD       LO, SLO, SLO; \
	VPMULLD      Z18, HI, HI; \
	VPADDD       HI, SHI, SHI; \
	VPMULLD.BCST (4*(S))(R13)IDX, Z18, Z19; \
	VPADDD       Z19, STERM, STERM

#define M6GROUP(S) \
	VPXORD    Z0, Z0, Z0; \
	VPXORD    Z1, Z1, Z1; \
	VPXORD    Z2, Z2, Z2; \
	VPXORD    Z3, Z3, Z3; \
	VPXORD    Z4, Z4, Z4; \
	VPXORD    Z5, Z5, Z5; \
	VPXORD    Z6, Z6, Z6; \
	VPXORD    Z7, Z7, Z7; \
	M6QUAD(4*(S)); \
	M6QUAD(4*(S)+1); \
	M6QUAD(4*(S)+2); \
	M6QUAD(4*(S)+3); \
	VPMOVSXBD (3072+16*(S))(R9), Z18; \
	M6SCALE(Z0, Z1, Z8, Z12, Z24, S, ROW0); \
	M6SCALE(Z2, Z3, Z9, Z13, Z25, S, ROW1); \
	M6SCALE(Z4, Z5, Z10, Z14, Z26, S, ROW2); \
	M6SCALE(Z6, Z7, Z11, Z15, Z27, S, ROW3)

// HI256LO(HIY, HI, LOY, LO) leaves 256·hi + lo of the sixteen int32 lanes of HI and LO in
// f64, exact, in Z0 (lanes 0-7) and Z1 (lanes 8-15), through Z2 and Z3: the super-block sums
// that the K-quant GEMMs split in two halves to keep them exact in int32.
#define HI256LO(HIY, HI, LOY, LO) \
	VCVTDQ2PD     HIY, Z0; \
	VEXTRACTI64X4 $1, HI, Y1; \
	VCVTDQ2PD     Y1, Z1; \
	VCVTDQ2PD     LOY, Z2; \
	VEXTRACTI64X4 $1, LO, Y3; \
	VCVTDQ2PD     Y3, Z3; \
	VMULPD.BCST   gf64x256<>(SB), Z0, Z0; \
	VADDPD        Z2, Z0, Z0; \
	VMULPD.BCST   gf64x256<>(SB), Z1, Z1; \
	VADDPD        Z3, Z1, Z1

// M6FIN(LOY, LO, HIY, HI, TY, T, ACC, IDX) adds one row's term of the super-block into
// ACC: isum = 256·hi + lo - 32·term in f64 (exact), rounded to f32, times float32(d·da)
// (Z19 holding d), through Z0-Z7 and Z18.
#define M6FIN(LOY, LO, HIY, HI, TY, T, ACC, IDX) \
	HI256LO(HIY, HI, LOY, LO); \
	VCVTDQ2PD     TY, Z4; \
	VEXTRACTI64X4 $1, T, Y5; \
	VCVTDQ2PD     Y5, Z5; \
	VMULPD.BCST   gf64x32<>(SB), Z4, Z4; \
	VSUBPD        Z4, Z0, Z0; \
	VMULPD.BCST   gf64x32<>(SB), Z5, Z5; \
	VSUBPD        Z5, Z1, Z1; \
	VCVTPD2PS     Z0, Y0; \
	VCVTPD2PS     Z1, Y1; \
	VINSERTF64X4  $1, Y1, Z0, Z0; \
	VMULPS.BCST   (R12)IDX, Z19, Z18; \
	VMULPS        Z18, Z0, Z0; \
	VADDPS        Z0, ACC, ACC

// func gemmQ6_KAVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
TEXT ·gemmQ6_KAVX512(SB), NOSPLIT, $0-64
	MOVQ         y+0(FP), DI
	MOVQ         ystride+8(FP), SI
	SHLQ         $2, SI
	LEAQ         (SI)(SI*2), R15
	MOVQ         w+16(FP), R9
	MOVQ         n+24(FP), CX
	MOVQ         qs+32(FP), R11
	MOVQ         ds+40(FP), R12
	MOVQ         ss+48(FP), R13
	MOVQ         astride+56(FP), BX
	LEAQ         (BX)(BX*2), R10
	VMOVDQU32    q6Rot<>(SB), Z22
	VPBROADCASTD gbytes30<>(SB), Z20
	VPBROADCASTD gbytes0f<>(SB), Z29
	VMOVUPS      (DI), Z28
	VMOVUPS      (DI)(SI*1), Z30
	VMOVUPS      (DI)(SI*2), Z31
	VMOVUPS      (DI)(R15*1), Z21

m6block:
	VPXORD    Z8, Z8, Z8
	VPXORD    Z9, Z9, Z9
	VPXORD    Z10, Z10, Z10
	VPXORD    Z11, Z11, Z11
	VPXORD    Z12, Z12, Z12
	VPXORD    Z13, Z13, Z13
	VPXORD    Z14, Z14, Z14
	VPXORD    Z15, Z15, Z15
	VPXORD    Z24, Z24, Z24
	VPXORD    Z25, Z25, Z25
	VPXORD    Z26, Z26, Z26
	VPXORD    Z27, Z27, Z27
	M6GROUP(0)
	M6GROUP(1)
	M6GROUP(2)
	M6GROUP(3)
	M6GROUP(4)
	M6GROUP(5)
	M6GROUP(6)
	M6GROUP(7)
	M6GROUP(8)
	M6GROUP(9)
	M6GROUP(10)
	M6GROUP(11)
	M6GROUP(12)
	M6GROUP(13)
	M6GROUP(14)
	M6GROUP(15)
	VCVTPH2PS 3328(R9), Z19
	M6FIN(Y8, Z8, Y12, Z12, Y24, Z24, Z28, ROW0)
	M6FIN(Y9, Z9, Y13, Z13, Y25, Z25, Z30, ROW1)
	M6FIN(Y10, Z10, Y14, Z14, Y26, Z26, Z31, ROW2)
	M6FIN(Y11, Z11, Y15, Z15, Y27, Z27, Z21, ROW3)
	ADDQ      $3360, R9
	ADDQ      $512, R11
	ADDQ      $4, R12
	ADDQ      $64, R13
	DECQ      CX
	JNZ       m6block
	VMOVUPS   Z28, (DI)
	VMOVUPS   Z30, (DI)(SI*1)
	VMOVUPS   Z31, (DI)(SI*2)
	VMOVUPS   Z21, (DI)(R15*1)
	VZEROUPPER
	RET

// Q4_K: per super-block the group's scales decoded once (as the GEMV's K4SCALES, to the
// stack) and each row's digits of its sub-block sums (K4DIGITS, a row's 24 bytes at
// 128+32i(SP)); per sub-block the quads' nibbles split once (lanes 8-15 taking 16 times
// their values, as Q4_0's) for the four rows, each row's sums scaled by the sub-block's
// scales; then per row the mins term (K4MINS: the rows' mins permuted once, six VPDPBUSD a
// row), the nibbles' factor divided out, isum = 256·hi + lo exact in f64 and rounded once,
// acc += float32(dd·isum) - float32(dm·msum): the GEMV's Q4_K arithmetic.
//
// Registers: Z0-Z7 the rows' lo and hi sums of a sub-block, then temps (Z4, Z5 the group's
// d and dmin); Z8-Z11 the rows' scaled lo sums of the super-block, Z12-Z15 their hi sums;
// Z16 the quad, then a row's msum; Z18 the sub-block's scales; Z19, Z20 the rows' mins
// m_0..3 and m_4..7 as bytes; Z21-Z24 the rows' outputs; Z25 the nibbles' shifts; Z26 0x30
// bytes, Z27 k4mperm, Z28 0x3f bytes, Z29 the nibble mask, Z30 0x0f bytes, Z31 a temp.

// M4DIGITS(IDX, OFF) writes the digits of the super-block's sub-block sums A_j of the row
// at IDX (from R13) to OFF(SP): K4SUMDIGITS.
#define M4DIGITS(IDX, OFF) K4SUMDIGITS((R13)IDX, OFF)

// M4QUAD(K) splits quad K's nibbles as Q4W does (Z29 the nibble mask) and adds it times
// the four rows' activations into Z0-Z7; M5QUAD(K) makes quad K of a Q5_K block ready
// (its fifth bits at 2048; Z25 Q5READY's shifts, Z30 0x0f bytes, Z29 0x10 bytes) instead.
#define M4QUAD(K) \
	VBROADCASTI64X4 (32*(K))(R9), Z16; \
	VPANDD          Z29, Z16, Z16; \
	M4DOTS(K)

#define M5QUAD(K) \
	Q5READY((32*(K))(R9), (2048+8*(K))(R9), Z16, Z25, Z30, Z29); \
	M4DOTS(K)

// M4DOTS(K) adds the quad in Z16 times quad K's activations of the four rows into Z0-Z7.
#define M4DOTS(K) \
	VPDPBUSD.BCST   (4*(K))(R11), Z16, Z0; \
	VPDPBUSD.BCST   (256+4*(K))(R11), Z16, Z1; \
	VPDPBUSD.BCST   (4*(K))(R11)(BX*1), Z16, Z2; \
	VPDPBUSD.BCST   (256+4*(K))(R11)(BX*1), Z16, Z3; \
	VPDPBUSD.BCST   (4*(K))(R11)(BX*2), Z16, Z4; \
	VPDPBUSD.BCST   (256+4*(K))(R11)(BX*2), Z16, Z5; \
	VPDPBUSD.BCST   (4*(K))(R11)(R10*1), Z16, Z6; \
	VPDPBUSD.BCST   (256+4*(K))(R11)(R10*1), Z16, Z7

#define M4SCALE(LO, HI, SLO, SHI) \
	VPMULLD Z18, LO, LO; \
	VPADDD  LO, SLO, SLO; \
	VPMULLD Z18, HI, HI; \
	VPADDD  HI, SHI, SHI

#define M4SUB(QUAD, PF, J) \
	PF(J); \
	VPXORD    Z0, Z0, Z0; \
	VPXORD    Z1, Z1, Z1; \
	VPXORD    Z2, Z2, Z2; \
	VPXORD    Z3, Z3, Z3; \
	VPXORD    Z4, Z4, Z4; \
	VPXORD    Z5, Z5, Z5; \
	VPXORD    Z6, Z6, Z6; \
	VPXORD    Z7, Z7, Z7; \
	QUAD(8*(J)); \
	QUAD(8*(J)+1); \
	QUAD(8*(J)+2); \
	QUAD(8*(J)+3); \
	QUAD(8*(J)+4); \
	QUAD(8*(J)+5); \
	QUAD(8*(J)+6); \
	QUAD(8*(J)+7); \
	VPMOVZXBD (16*(J))(SP), Z18; \
	M4SCALE(Z0, Z1, Z8, Z12); \
	M4SCALE(Z2, Z3, Z9, Z13); \
	M4SCALE(Z4, Z5, Z10, Z14); \
	M4SCALE(Z6, Z7, Z11, Z15)

// M4FIN(SLO, SLOY, SHI, SHIY, DIG, ACC, IDX, FIX) adds the super-block's term of the row
// whose digits are at DIG(SP) and scale at IDX from R12 into ACC: K4MINS' per-row part and
// K4TERM, through Z0-Z3, Z6, Z7 and Z16; FIX divides out the nibbles' factor.
#define M4FIN(SLO, SLOY, SHI, SHIY, DIG, ACC, IDX, FIX) \
	VPXORD        Z16, Z16, Z16; \
	VPDPBUSD.BCST (DIG+16)(SP), Z19, Z16; \
	VPDPBUSD.BCST (DIG+20)(SP), Z20, Z16; \
	VPSLLD        $8, Z16, Z16; \
	VPDPBUSD.BCST (DIG+8)(SP), Z19, Z16; \
	VPDPBUSD.BCST (DIG+12)(SP), Z20, Z16; \
	VPSLLD        $8, Z16, Z16; \
	VPDPBUSD.BCST DIG(SP), Z19, Z16; \
	VPDPBUSD.BCST (DIG+4)(SP), Z20, Z16; \
	FIX(SLO); \
	FIX(SHI); \
	HI256LO(SHIY, SHI, SLOY, SLO); \
	VCVTPD2PS     Z0, Y0; \
	VCVTPD2PS     Z1, Y1; \
	VINSERTF64X4  $1, Y1, Z0, Z0; \
	VCVTDQ2PS     Z16, Z16; \
	VMULPS.BCST   (R12)IDX, Z4, Z6; \
	VMULPS.BCST   (R12)IDX, Z5, Z7; \
	VMULPS        Z6, Z0, Z0; \
	VMULPS        Z7, Z16, Z16; \
	VSUBPS        Z16, Z0, Z0; \
	VADDPS        Z0, ACC, ACC

#define K4NIBFIX(R) VPSRAVD Z25, R, R

// GEMMK4(QUAD, FIX, PF, SC, BB) is the body of the Q4_K and Q5_K kernels: blocks of BB
// bytes whose scale bytes start at SC (d and dmin 192 and 224 bytes on), QUAD(K) taking
// quad K, FIX the nibbles' factor out and PF(J) prefetching ahead at sub-block J.
#define GEMMK4(QUAD, FIX, PF, SC, BB) \
	MOVQ         y+0(FP), DI; \
	MOVQ         ystride+8(FP), SI; \
	SHLQ         $2, SI; \
	LEAQ         (SI)(SI*2), R15; \
	MOVQ         w+16(FP), R9; \
	MOVQ         n+24(FP), CX; \
	MOVQ         qs+32(FP), R11; \
	MOVQ         ds+40(FP), R12; \
	MOVQ         ss+48(FP), R13; \
	MOVQ         astride+56(FP), BX; \
	LEAQ         (BX)(BX*2), R10; \
	VPBROADCASTD gbytes30<>(SB), Z26; \
	VMOVDQU32    k4mperm<>(SB), Z27; \
	VPBROADCASTD gbytes3f<>(SB), Z28; \
	VPBROADCASTD gbytes0f<>(SB), Z30; \
	VMOVUPS      (DI), Z21; \
	VMOVUPS      (DI)(SI*1), Z22; \
	VMOVUPS      (DI)(SI*2), Z23; \
	VMOVUPS      (DI)(R15*1), Z24; \
k4block: \
	M4DIGITS(ROW0, 128); \
	M4DIGITS(ROW1, 160); \
	M4DIGITS(ROW2, 192); \
	M4DIGITS(ROW3, 224); \
	K4SCALES(SC, (R9), 0, Z16, Z30); \
	VPXORD       Z8, Z8, Z8; \
	VPXORD       Z9, Z9, Z9; \
	VPXORD       Z10, Z10, Z10; \
	VPXORD       Z11, Z11, Z11; \
	VPXORD       Z12, Z12, Z12; \
	VPXORD       Z13, Z13, Z13; \
	VPXORD       Z14, Z14, Z14; \
	VPXORD       Z15, Z15, Z15; \
	M4SUB(QUAD, PF, 0); \
	M4SUB(QUAD, PF, 1); \
	M4SUB(QUAD, PF, 2); \
	M4SUB(QUAD, PF, 3); \
	M4SUB(QUAD, PF, 4); \
	M4SUB(QUAD, PF, 5); \
	M4SUB(QUAD, PF, 6); \
	M4SUB(QUAD, PF, 7); \
	K4MINBYTES(SC, (R9), Z19, Z20, Z31, Z30); \
	VCVTPH2PS    (SC+192)(R9), Z4; \
	VCVTPH2PS    (SC+224)(R9), Z5; \
	M4FIN(Z8, Y8, Z12, Y12, 128, Z21, ROW0, FIX); \
	M4FIN(Z9, Y9, Z13, Y13, 160, Z22, ROW1, FIX); \
	M4FIN(Z10, Y10, Z14, Y14, 192, Z23, ROW2, FIX); \
	M4FIN(Z11, Y11, Z15, Y15, 224, Z24, ROW3, FIX); \
	ADDQ         $BB, R9; \
	ADDQ         $512, R11; \
	ADDQ         $4, R12; \
	ADDQ         $64, R13; \
	DECQ         CX; \
	JNZ          k4block; \
	VMOVUPS      Z21, (DI); \
	VMOVUPS      Z22, (DI)(SI*1); \
	VMOVUPS      Z23, (DI)(SI*2); \
	VMOVUPS      Z24, (DI)(R15*1); \
	VZEROUPPER; \
	RET

// func gemmQ4_KAVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
TEXT ·gemmQ4_KAVX512(SB), NOSPLIT, $256-64
	VMOVDQU32 gnibmask<>(SB), Z29
	VMOVDQU32 gnibshift<>(SB), Z25
	GEMMK4(M4QUAD, K4NIBFIX, NOPF, 2048, 2304)

// Q5_K: Q4_K's work with the quads made ready as Q5_0's, whose values (0..31, unsplit)
// need no factor divided out.
// func gemmQ5_KAVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
TEXT ·gemmQ5_KAVX512(SB), NOSPLIT, $256-64
	VPBROADCASTD gbytes10<>(SB), Z29
	VMOVDQU32    gemmq5shift<>(SB), Z25
	GEMMK4(M5QUAD, NOFIX, K5PF, 2560, 2816)
