//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 + F16C kernels of LinearRows, one per weight dtype:
//
//	func linear4<T>AVX2(acc *[4][8]float32, x *float32, xstride, m int, w unsafe.Pointer, off *[4]int, n int)
//
// Each continues the partial sums of m ≥ 0 rows of x (row mi at byte offset mi·xstride from
// x, its sums in the mi-th [4][8] block from acc) against 4 weight rows (row r at element
// off[r] of w, the matrix's data) over n elements, n > 0 and a multiple of 8:
//
//	for mi := range m { for r := range 4 { for i := range n {
//		acc[mi][r][i%8] = fma32(x[mi][i], widen(w_r[i]), acc[mi][r][i%8])
//	} } }
//
// One YMM register per (row of x, weight row) holds that pair's 8 partial sums; lane j takes
// elements j, j+8, j+16, … in increasing order, one VFMADD231PS per element (the
// accumulator, x, the weight: one rounding, as fma32): bitwise the reference loop's
// partials, and the AVX-512 GEMM's (gemm_avx512_amd64.s), which fuses the same way. The
// partial sums are loaded from acc and stored back, so a row may be reduced tile by tile;
// the caller adds the last in%8 products and combines the lanes (combine8).
//
// Pairs of rows of x run a 2×4 block (8 accumulators; each weight vector is loaded and
// widened once for both rows), an odd last row a 1×4 block. The caller passes any 4 weight
// rows (repeating one when fewer remain). Widening is exact: VCVTPH2PS for f16 (as
// dtype.F16ToF32), a zero extension and a 16-bit shift for bf16.
//
// Registers: AX element index, CX n, DX rows of x left, BX xstride, SI x (x0), R13 x1,
// R8-R11 the weight rows, DI acc (acc0), R12 acc1 (acc0+128); Y0-Y3 (and Y4-Y7 for x1) the
// partial sums.

// ROWS points R8-R11 at the four weight rows: BASE + OFF[r]·SCALE.
#define ROWS(BASE, OFF, SCALE) \
	MOVQ 0(OFF), R8; \
	LEAQ (BASE)(R8*SCALE), R8; \
	MOVQ 8(OFF), R9; \
	LEAQ (BASE)(R9*SCALE), R9; \
	MOVQ 16(OFF), R10; \
	LEAQ (BASE)(R10*SCALE), R10; \
	MOVQ 24(OFF), R11; \
	LEAQ (BASE)(R11*SCALE), R11

#define LOAD_ACC4(P, A0, A1, A2, A3) \
	VMOVUPS (P), A0; \
	VMOVUPS 32(P), A1; \
	VMOVUPS 64(P), A2; \
	VMOVUPS 96(P), A3

#define STORE_ACC4(P, A0, A1, A2, A3) \
	VMOVUPS A0, (P); \
	VMOVUPS A1, 32(P); \
	VMOVUPS A2, 64(P); \
	VMOVUPS A3, 96(P)

// The weight loads: eight elements of row R at index AX, widened to f32 in Y.
#define WF32(R, Y) VMOVUPS (R)(AX*4), Y
#define WBF16(R, Y) VPMOVZXWD (R)(AX*2), Y; VPSLLD $16, Y, Y
#define WF16(R, Y) VCVTPH2PS (R)(AX*2), Y

// GEMV4_F32 is one step of eight elements of 1 row of x against 4 f32 weight rows.
#define GEMV4_F32 \
	VMOVUPS     (SI)(AX*4), Y4; \
	VFMADD231PS (R8)(AX*4), Y4, Y0; \
	VFMADD231PS (R9)(AX*4), Y4, Y1; \
	VFMADD231PS (R10)(AX*4), Y4, Y2; \
	VFMADD231PS (R11)(AX*4), Y4, Y3

// PREFETCH4_16 prefetches the four 16-bit weight rows 4 KiB ahead of index AX. The 1×4
// loops of the 16-bit kernels (GEMV) run it once per 64-byte line of every row: measured,
// it lifts them from about 33 to 45 GB/s on one core, where the f32 kernel gains nothing
// from it. Past a row's end it fetches the start of the next row of the same quarter,
// which is the row the next pass reads (see linearRowsAVX2).
#define PREFETCH4_16 \
	PREFETCHT0 4096(R8)(AX*2); \
	PREFETCHT0 4096(R9)(AX*2); \
	PREFETCHT0 4096(R10)(AX*2); \
	PREFETCHT0 4096(R11)(AX*2)

// GEMV4_16 is GEMV4_F32 for 16-bit weights widened by W.
#define GEMV4_16(W) \
	VMOVUPS (SI)(AX*4), Y4; \
	W(R8, Y5); \
	W(R9, Y6); \
	W(R10, Y7); \
	W(R11, Y8); \
	VFMADD231PS Y5, Y4, Y0; \
	VFMADD231PS Y6, Y4, Y1; \
	VFMADD231PS Y7, Y4, Y2; \
	VFMADD231PS Y8, Y4, Y3

// GEMM2_ROW multiplies weight row R (widened by W into Y10) with both rows of x (Y8, Y9)
// and adds the products onto A0 (x0's partials) and A1 (x1's).
#define GEMM2_ROW(W, R, A0, A1) \
	W(R, Y10); \
	VFMADD231PS Y10, Y8, A0; \
	VFMADD231PS Y10, Y9, A1

// GEMM2 is one step of eight elements of 2 rows of x against 4 weight rows.
#define GEMM2(W) \
	VMOVUPS (SI)(AX*4), Y8; \
	VMOVUPS (R13)(AX*4), Y9; \
	GEMM2_ROW(W, R8, Y0, Y4); \
	GEMM2_ROW(W, R9, Y1, Y5); \
	GEMM2_ROW(W, R10, Y2, Y6); \
	GEMM2_ROW(W, R11, Y3, Y7)

// LINEAR4_PROLOGUE loads a kernel's arguments and points R8-R11 at the weight rows; SCALE is
// the weight element size. Each kernel then runs its 2×4 loop over pairs of rows of x (acc
// advances 256 bytes and x two strides per pair) and its 1×4 loop over an odd last row.
#define LINEAR4_PROLOGUE(SCALE) \
	MOVQ acc+0(FP), DI; \
	MOVQ x+8(FP), SI; \
	MOVQ xstride+16(FP), BX; \
	MOVQ w+32(FP), DX; \
	MOVQ off+40(FP), R12; \
	MOVQ n+48(FP), CX; \
	ROWS(DX, R12, SCALE); \
	MOVQ m+24(FP), DX

// func linear4F32AVX2(acc *[4][8]float32, x *float32, xstride, m int, w unsafe.Pointer, off *[4]int, n int)
TEXT ·linear4F32AVX2(SB), NOSPLIT, $0-56
	LINEAR4_PROLOGUE(4)

f32pair:
	CMPQ DX, $2
	JB   f32single
	LEAQ (SI)(BX*1), R13
	LEAQ 128(DI), R12
	LOAD_ACC4(DI, Y0, Y1, Y2, Y3)
	LOAD_ACC4(R12, Y4, Y5, Y6, Y7)
	XORQ AX, AX

f32pairloop:
	GEMM2(WF32)
	ADDQ $8, AX
	CMPQ AX, CX
	JB   f32pairloop
	STORE_ACC4(DI, Y0, Y1, Y2, Y3)
	STORE_ACC4(R12, Y4, Y5, Y6, Y7)
	ADDQ $256, DI
	LEAQ (SI)(BX*2), SI
	SUBQ $2, DX
	JMP  f32pair

f32single:
	TESTQ DX, DX
	JZ    f32done
	LOAD_ACC4(DI, Y0, Y1, Y2, Y3)
	XORQ  AX, AX

f32singleloop:
	GEMV4_F32
	ADDQ $8, AX
	CMPQ AX, CX
	JB   f32singleloop
	STORE_ACC4(DI, Y0, Y1, Y2, Y3)

f32done:
	VZEROUPPER
	RET

// func linear4BF16AVX2(acc *[4][8]float32, x *float32, xstride, m int, w unsafe.Pointer, off *[4]int, n int)
TEXT ·linear4BF16AVX2(SB), NOSPLIT, $0-56
	LINEAR4_PROLOGUE(2)

bf16pair:
	CMPQ DX, $2
	JB   bf16single
	LEAQ (SI)(BX*1), R13
	LEAQ 128(DI), R12
	LOAD_ACC4(DI, Y0, Y1, Y2, Y3)
	LOAD_ACC4(R12, Y4, Y5, Y6, Y7)
	XORQ AX, AX

bf16pairloop:
	GEMM2(WBF16)
	ADDQ $8, AX
	CMPQ AX, CX
	JB   bf16pairloop
	STORE_ACC4(DI, Y0, Y1, Y2, Y3)
	STORE_ACC4(R12, Y4, Y5, Y6, Y7)
	ADDQ $256, DI
	LEAQ (SI)(BX*2), SI
	SUBQ $2, DX
	JMP  bf16pair

bf16single:
	TESTQ DX, DX
	JZ    bf16done
	LOAD_ACC4(DI, Y0, Y1, Y2, Y3)
	XORQ  AX, AX
	LEAQ  -24(CX), R12 // AX < R12: 32 elements (a line of every row) left

bf16singleloop4:
	CMPQ AX, R12
	JGE  bf16singleloop
	PREFETCH4_16
	GEMV4_16(WBF16)
	ADDQ $8, AX
	GEMV4_16(WBF16)
	ADDQ $8, AX
	GEMV4_16(WBF16)
	ADDQ $8, AX
	GEMV4_16(WBF16)
	ADDQ $8, AX
	JMP  bf16singleloop4

bf16singleloop:
	CMPQ AX, CX
	JAE  bf16singledone
	GEMV4_16(WBF16)
	ADDQ $8, AX
	JMP  bf16singleloop

bf16singledone:
	STORE_ACC4(DI, Y0, Y1, Y2, Y3)

bf16done:
	VZEROUPPER
	RET

// func linear4F16AVX2(acc *[4][8]float32, x *float32, xstride, m int, w unsafe.Pointer, off *[4]int, n int)
TEXT ·linear4F16AVX2(SB), NOSPLIT, $0-56
	LINEAR4_PROLOGUE(2)

f16pair:
	CMPQ DX, $2
	JB   f16single
	LEAQ (SI)(BX*1), R13
	LEAQ 128(DI), R12
	LOAD_ACC4(DI, Y0, Y1, Y2, Y3)
	LOAD_ACC4(R12, Y4, Y5, Y6, Y7)
	XORQ AX, AX

f16pairloop:
	GEMM2(WF16)
	ADDQ $8, AX
	CMPQ AX, CX
	JB   f16pairloop
	STORE_ACC4(DI, Y0, Y1, Y2, Y3)
	STORE_ACC4(R12, Y4, Y5, Y6, Y7)
	ADDQ $256, DI
	LEAQ (SI)(BX*2), SI
	SUBQ $2, DX
	JMP  f16pair

f16single:
	TESTQ DX, DX
	JZ    f16done
	LOAD_ACC4(DI, Y0, Y1, Y2, Y3)
	XORQ  AX, AX
	LEAQ  -24(CX), R12 // AX < R12: 32 elements (a line of every row) left

f16singleloop4:
	CMPQ AX, R12
	JGE  f16singleloop
	PREFETCH4_16
	GEMV4_16(WF16)
	ADDQ $8, AX
	GEMV4_16(WF16)
	ADDQ $8, AX
	GEMV4_16(WF16)
	ADDQ $8, AX
	GEMV4_16(WF16)
	ADDQ $8, AX
	JMP  f16singleloop4

f16singleloop:
	CMPQ AX, CX
	JAE  f16singledone
	GEMV4_16(WF16)
	ADDQ $8, AX
	JMP  f16singleloop

f16singledone:
	STORE_ACC4(DI, Y0, Y1, Y2, Y3)

f16done:
	VZEROUPPER
	RET
