//go:build amd64 && !noasm

#include "textflag.h"
#include "blocks_avx512_amd64.h"
#include "gemm_avx512_amd64.h"

// The eight-row GEMM kernel of Q4_0 (gemm_amd64.go): gemm_avx512_amd64.s's
// kernels with eight rows of activations a tile instead of four, so each weight quad made
// ready serves 16 VPDPBUSD instead of 8 and sixteen independent sums hide VPDPBUSD's
// latency. Same contract, per block and row the same integer sums and float operations
// (so each output is bitwise the GEMV's), for rows i = 0..7:
//
//	func gemm8<T>AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
//
// Registers: DI y, SI ystride in bytes, R15 3·SI, R9 the block, CX blocks left, R11 row
// 0's planes, R12 its scales, R13 its sums, BX astride, R10 3·BX, R8, AX and DX row 4's
// planes, scales and sums; Z0-Z7 the rows' lo sums of the block, Z8-Z15 their hi sums,
// Z22-Z26 and Z29-Z31 the rows' outputs, Z16/Z17 the quad, Z18, Z19 temps, Z20 the group's
// dw, Z27 the nibbles' shifts, Z28 the byte mask.

// M8QUAD(K, W, T) adds quad K of the block, made by W into T, times the quad's activations
// of each of the eight rows (lo and hi planes, broadcast) into Z0-Z7 and Z8-Z15.
#define M8QUAD(K, W, T) \
	W(K, T); \
	VPDPBUSD.BCST (4*(K))(R11), T, Z0; \
	VPDPBUSD.BCST (32+4*(K))(R11), T, Z8; \
	VPDPBUSD.BCST (4*(K))(R11)(BX*1), T, Z1; \
	VPDPBUSD.BCST (32+4*(K))(R11)(BX*1), T, Z9; \
	VPDPBUSD.BCST (4*(K))(R11)(BX*2), T, Z2; \
	VPDPBUSD.BCST (32+4*(K))(R11)(BX*2), T, Z10; \
	VPDPBUSD.BCST (4*(K))(R11)(R10*1), T, Z3; \
	VPDPBUSD.BCST (32+4*(K))(R11)(R10*1), T, Z11; \
	VPDPBUSD.BCST (4*(K))(R8), T, Z4; \
	VPDPBUSD.BCST (32+4*(K))(R8), T, Z12; \
	VPDPBUSD.BCST (4*(K))(R8)(BX*1), T, Z5; \
	VPDPBUSD.BCST (32+4*(K))(R8)(BX*1), T, Z13; \
	VPDPBUSD.BCST (4*(K))(R8)(BX*2), T, Z6; \
	VPDPBUSD.BCST (32+4*(K))(R8)(BX*2), T, Z14; \
	VPDPBUSD.BCST (4*(K))(R8)(R10*1), T, Z7; \
	VPDPBUSD.BCST (32+4*(K))(R8)(R10*1), T, Z15

// M8TERM(LO, HI, ACC, SC, SM, FIX, SHIFT) adds the block's term of the row whose scale
// and sum are at SC and SM into ACC: gemm_avx512_amd64.s's MTERM.
#define M8TERM(LO, HI, ACC, SC, SM, FIX, SHIFT) \
	VPSLLD       $8, HI, HI; \
	VPADDD       HI, LO, LO; \
	FIX(LO); \
	VPBROADCASTD SM, Z18; \
	VPSLLD       $SHIFT, Z18, Z18; \
	VPSUBD       Z18, LO, LO; \
	VCVTDQ2PS    LO, LO; \
	VMULPS.BCST  SC, Z20, Z19; \
	VMULPS       Z19, LO, LO; \
	VADDPS       LO, ACC, ACC

// M8TERMS(FIX, SHIFT) adds the block's terms of the eight rows.
#define M8TERMS(FIX, SHIFT) \
	M8TERM(Z0, Z8, Z22, (R12), (R13), FIX, SHIFT); \
	M8TERM(Z1, Z9, Z23, (R12)(BX*1), (R13)(BX*1), FIX, SHIFT); \
	M8TERM(Z2, Z10, Z24, (R12)(BX*2), (R13)(BX*2), FIX, SHIFT); \
	M8TERM(Z3, Z11, Z25, (R12)(R10*1), (R13)(R10*1), FIX, SHIFT); \
	M8TERM(Z4, Z12, Z26, (AX), (DX), FIX, SHIFT); \
	M8TERM(Z5, Z13, Z29, (AX)(BX*1), (DX)(BX*1), FIX, SHIFT); \
	M8TERM(Z6, Z14, Z30, (AX)(BX*2), (DX)(BX*2), FIX, SHIFT); \
	M8TERM(Z7, Z15, Z31, (AX)(R10*1), (DX)(R10*1), FIX, SHIFT)

// GEMM8(W, FIX, SHIFT, BB, D) is a kernel's body for blocks of BB bytes whose scales are
// at D in the block, W making its quads ready; the row's term is isum = FIX(256·hi + lo)
// - (s << SHIFT), as the four-row kernels' Q4TERM. (Q8_0 through this loop, its bytes made
// unsigned, ran batch-16 decode slower than its four-row kernel, and was dropped.)
#define GEMM8(W, FIX, SHIFT, BB, D) \
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
	LEAQ      (R11)(BX*4), R8; \
	LEAQ      (R12)(BX*4), AX; \
	LEAQ      (R13)(BX*4), DX; \
	VMOVUPS   (DI), Z22; \
	VMOVUPS   (DI)(SI*1), Z23; \
	VMOVUPS   (DI)(SI*2), Z24; \
	VMOVUPS   (DI)(R15*1), Z25; \
	LEAQ      (DI)(SI*4), R14; \
	VMOVUPS   (R14), Z26; \
	VMOVUPS   (R14)(SI*1), Z29; \
	VMOVUPS   (R14)(SI*2), Z30; \
	VMOVUPS   (R14)(R15*1), Z31; \
block: \
	VPXORD    Z0, Z0, Z0; \
	VPXORD    Z1, Z1, Z1; \
	VPXORD    Z2, Z2, Z2; \
	VPXORD    Z3, Z3, Z3; \
	VPXORD    Z4, Z4, Z4; \
	VPXORD    Z5, Z5, Z5; \
	VPXORD    Z6, Z6, Z6; \
	VPXORD    Z7, Z7, Z7; \
	VPXORD    Z8, Z8, Z8; \
	VPXORD    Z9, Z9, Z9; \
	VPXORD    Z10, Z10, Z10; \
	VPXORD    Z11, Z11, Z11; \
	VPXORD    Z12, Z12, Z12; \
	VPXORD    Z13, Z13, Z13; \
	VPXORD    Z14, Z14, Z14; \
	VPXORD    Z15, Z15, Z15; \
	M8QUAD(0, W, Z16); \
	M8QUAD(1, W, Z17); \
	M8QUAD(2, W, Z16); \
	M8QUAD(3, W, Z17); \
	M8QUAD(4, W, Z16); \
	M8QUAD(5, W, Z17); \
	M8QUAD(6, W, Z16); \
	M8QUAD(7, W, Z17); \
	VCVTPH2PS D(R9), Z20; \
	M8TERMS(FIX, SHIFT); \
	ADDQ      $BB, R9; \
	ADDQ      $64, R11; \
	ADDQ      $64, R8; \
	ADDQ      $4, R12; \
	ADDQ      $4, R13; \
	ADDQ      $4, AX; \
	ADDQ      $4, DX; \
	DECQ      CX; \
	JNZ       block; \
	VMOVUPS   Z22, (DI); \
	VMOVUPS   Z23, (DI)(SI*1); \
	VMOVUPS   Z24, (DI)(SI*2); \
	VMOVUPS   Z25, (DI)(R15*1); \
	VMOVUPS   Z26, (R14); \
	VMOVUPS   Z29, (R14)(SI*1); \
	VMOVUPS   Z30, (R14)(SI*2); \
	VMOVUPS   Z31, (R14)(R15*1); \
	VZEROUPPER; \
	RET

// func gemm8Q4_0AVX512(y *float32, ystride int, w *byte, n int, qs, ds, ss *byte, astride int)
TEXT ·gemm8Q4_0AVX512(SB), NOSPLIT, $0-64
	VMOVDQU32 gnibmask<>(SB), Z28
	VMOVDQU32 gnibshift<>(SB), Z27
	GEMM8(Q4W, NIBFIX, 3, 288, 256)
