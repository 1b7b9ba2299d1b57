//go:build amd64 && !noasm

#include "textflag.h"

// AVX-512 (F, BW, VL, VNNI) GEMM kernels of Dot for Q8_0 and Q4_0 (gemm_amd64.go): one
// group of 16 weight rows against four rows of activations, each weight quad made ready
// for VPDPBUSD once (Q8_0's bytes made unsigned, Q4_0's nibbles split) and multiplied with
// the quad's activations of all four rows:
//
//	func gemm<T>AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
//
// continues y[i·ystride + r] (r = 0..15, i = 0..3; ystride in elements) with blocks 0..n-1
// (n ≥ 1) of the group at w against row i of the activations, whose planes, scales and
// sums of those blocks start at qs, ds and ss + i·astride. Per block and row the integer
// sum and the f32 term are those of the GEMV kernels (dot_group_avx512_amd64.s), one
// instruction for one: isum = FIX(256·hi + lo) - (s << SHIFT), then
// acc += float32(isum)·float32(dw·da), so each output is bitwise the GEMV's, blocks added
// in order. y holding zeros on the first call of a row is the GEMV's zeroed sum.
//
// Registers: DI y, SI ystride in bytes, R15 3·SI, R9 the block, CX blocks left, R11 row 0's
// planes, R12 its scales, R13 its sums, BX astride, R10 3·BX; Z0-Z3 the rows' lo sums of
// the block, Z4-Z7 their hi sums, Z8-Z11 the rows' outputs, Z16/Z17 the quad, Z18, Z19
// temps, Z20 the group's dw, Z27 the nibbles' shifts, Z28 the byte mask.

DATA gemmbytes80<>+0(SB)/4, $0x80808080
GLOBL gemmbytes80<>(SB), RODATA|NOPTR, $4

// The nibble split of the GEMV kernels' NQUAD: [0x0f × 32 | 0xf0 × 32], and the shifts
// (0 in lanes 0-7, 4 in 8-15) that divide rows 8-15's sums back by 16.
DATA gemmnibmask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gemmnibmask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gemmnibmask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gemmnibmask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gemmnibmask<>+32(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA gemmnibmask<>+40(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA gemmnibmask<>+48(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA gemmnibmask<>+56(SB)/8, $0xf0f0f0f0f0f0f0f0
GLOBL gemmnibmask<>(SB), RODATA|NOPTR, $64
DATA gemmnibshift<>+0(SB)/8, $0
DATA gemmnibshift<>+8(SB)/8, $0
DATA gemmnibshift<>+16(SB)/8, $0
DATA gemmnibshift<>+24(SB)/8, $0
DATA gemmnibshift<>+32(SB)/8, $0x0000000400000004
DATA gemmnibshift<>+40(SB)/8, $0x0000000400000004
DATA gemmnibshift<>+48(SB)/8, $0x0000000400000004
DATA gemmnibshift<>+56(SB)/8, $0x0000000400000004
GLOBL gemmnibshift<>(SB), RODATA|NOPTR, $64

// Q8W(K, T) makes quad K's 64 bytes unsigned (w + 128) in T; Q4W(K, T) splits quad K's 32
// bytes of nibbles into T (rows 0-7 low, 16 times rows 8-15 high).
#define Q8W(K, T) VPXORD (64*(K))(R9), Z28, T

#define Q4W(K, T) \
	VBROADCASTI64X4 (32*(K))(R9), T; \
	VPANDD          Z28, T, T

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

#define NIBFIX(R) VPSRAVD Z27, R, R
#define NOFIX(R)

#define ROW0
#define ROW1 (BX*1)
#define ROW2 (BX*2)
#define ROW3 (R10*1)

// GEMM(W, FIX, SHIFT, BB, D) is a kernel's body for blocks of BB bytes whose scales are at
// D in the block.
#define GEMM(W, FIX, SHIFT, BB, D) \
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
	MTERM(Z0, Z4, Z8, ROW0, FIX, SHIFT); \
	MTERM(Z1, Z5, Z9, ROW1, FIX, SHIFT); \
	MTERM(Z2, Z6, Z10, ROW2, FIX, SHIFT); \
	MTERM(Z3, Z7, Z11, ROW3, FIX, SHIFT); \
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

// Q8_0: isum = 256·hi + lo - 128·s (the weights made unsigned, w + 128).
// func gemmQ8_0AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
TEXT ·gemmQ8_0AVX512(SB), NOSPLIT, $0-64
	VPBROADCASTD gemmbytes80<>(SB), Z28
	GEMM(Q8W, NOFIX, 7, 544, 512)

// Q4_0: isum = NIBFIX(256·hi + lo) - 8·s.
// func gemmQ4_0AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
TEXT ·gemmQ4_0AVX512(SB), NOSPLIT, $0-64
	VMOVDQU32 gemmnibmask<>(SB), Z28
	VMOVDQU32 gemmnibshift<>(SB), Z27
	GEMM(Q4W, NIBFIX, 3, 288, 256)
