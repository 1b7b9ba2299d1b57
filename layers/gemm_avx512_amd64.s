//go:build amd64 && !noasm

#include "go_asm.h"
#include "textflag.h"

// The AVX-512 GEMM of LinearRows (gemm_amd64.go): one kernel per weight dtype that
// multiplies a packed tile of 12 weight rows (widened to f32) with any number of rows of x
// and, step by step in the same loop, widens the tile's next k-tile into a second panel.
//
// LinearRows' reduction order keeps 8 partial sums per output, element i in lane i%8, each
// product fused into its sum (fma32: one rounding). A ZMM register holds two such 8-lane
// groups, so that one VFMADD231PS advances 2 outputs by 8 elements each: the low half
// output 2p of the tile, the high half output 2p+1, both against the same 8 elements of one
// row of x, which VBROADCASTF64X4 copies into both halves. Every element is one
// VFMADD231PS (the partial sum, x, the weight), as in the AVX2 GEMV (linear_amd64.s):
// bitwise the reference loop's partial sums, and the GEMV's.

// A packed tile: for each step s of 8 elements, 6 pairs of 16 f32 (384 bytes a step), pair
// p holding elements 8s..8s+7 of weight row 2p and then of row 2p+1.

// Why the packing runs inside the micro-kernel: widening is bound by loads, conversions
// and stores, the micro-kernel by its FMAs, and as two calls of about a thousand
// instructions each the out-of-order window cannot overlap them (the pack was 25-30% of
// the GEMM at M = 16 and instruction-bound, docs/benchmarks/decode.md). Here the first
// three 4-row blocks of x each widen a quarter of the next k-tile (4 of its 12 rows, 2
// pairs a step) in the same loop, step for step; what they leave (fewer than 12 rows of x,
// or a next k-tile of another length) the tail widens alone.

// The pair loads: elements AX..AX+7 of rows R0 and R1, widened to f32 in the low and high
// halves of Z (Y, X: its lower 256 and 128 bits).
#define PAIR_F32(R0, R1, Z, Y, X) \
	VMOVUPS      (R0)(AX*4), Y; \
	VINSERTF64X4 $1, (R1)(AX*4), Z, Z

#define PAIR_F16(R0, R1, Z, Y, X) \
	VMOVDQU64    (R0)(AX*2), X; \
	VINSERTI32X4 $1, (R1)(AX*2), Y, Y; \
	VCVTPH2PS    Y, Z

#define PAIR_BF16(R0, R1, Z, Y, X) \
	VMOVDQU64    (R0)(AX*2), X; \
	VINSERTI32X4 $1, (R1)(AX*2), Y, Y; \
	VPMOVZXWD    Y, Z; \
	VPSLLD       $16, Z, Z

// PACK_STEP widens step AX/8 of a quarter of the next k-tile (its rows at DX, BX, R12,
// R13) into DI's 2 pairs, and moves DI to the next step's. It also prefetches the rows
// gemmTileK elements further, the k-tile after (or the next rows'), so that they arrive
// from DRAM before their own pack.
#define PACK_STEP(PAIR, SCALE) \
	PREFETCHT0 (const_gemmTileK*SCALE)(DX)(AX*SCALE); \
	PREFETCHT0 (const_gemmTileK*SCALE)(BX)(AX*SCALE); \
	PREFETCHT0 (const_gemmTileK*SCALE)(R12)(AX*SCALE); \
	PREFETCHT0 (const_gemmTileK*SCALE)(R13)(AX*SCALE); \
	PAIR(DX, BX, Z31, Y31, X31); \
	VMOVUPS    Z31, 0(DI); \
	PAIR(R12, R13, Z31, Y31, X31); \
	VMOVUPS    Z31, 64(DI); \
	ADDQ       $384, DI

// QUARTER points DX, BX, R12, R13 at the rows of quarter quarter-32(SP) of next
// (next+48(FP)) and DI at its first pair in next.panel.
#define QUARTER \
	MOVQ  next+48(FP), DI; \
	MOVQ  quarter-32(SP), R13; \
	SHLQ  $5, R13; \
	MOVQ  (gemmNext_rows+0)(DI)(R13*1), DX; \
	MOVQ  (gemmNext_rows+8)(DI)(R13*1), BX; \
	MOVQ  (gemmNext_rows+16)(DI)(R13*1), R12; \
	MOVQ  (gemmNext_rows+24)(DI)(R13*1), R13; \
	MOVQ  quarter-32(SP), AX; \
	SHLQ  $7, AX; \
	ADDQ  gemmNext_panel(DI), AX; \
	MOVQ  AX, DI

// ROW6 fuses the products of the broadcast 8 elements of x at R (into Z30) and the 6 pairs
// into A0-A5.
#define ROW6(R, A0, A1, A2, A3, A4, A5) \
	VBROADCASTF64X4 (R)(AX*4), Z30; \
	VFMADD231PS     Z24, Z30, A0; \
	VFMADD231PS     Z25, Z30, A1; \
	VFMADD231PS     Z26, Z30, A2; \
	VFMADD231PS     Z27, Z30, A3; \
	VFMADD231PS     Z28, Z30, A4; \
	VFMADD231PS     Z29, Z30, A5

#define LOAD_PAIRS \
	VMOVUPS 0(R8), Z24; \
	VMOVUPS 64(R8), Z25; \
	VMOVUPS 128(R8), Z26; \
	VMOVUPS 192(R8), Z27; \
	VMOVUPS 256(R8), Z28; \
	VMOVUPS 320(R8), Z29

// ROWS4_STEP loads the step's 6 pairs and fuses them with 8 elements of each of the 4 rows
// of x (at SI, R9, R10, R11) into their partial sums Z0-Z23.
#define ROWS4_STEP \
	LOAD_PAIRS; \
	ROW6(SI, Z0, Z1, Z2, Z3, Z4, Z5); \
	ROW6(R9, Z6, Z7, Z8, Z9, Z10, Z11); \
	ROW6(R10, Z12, Z13, Z14, Z15, Z16, Z17); \
	ROW6(R11, Z18, Z19, Z20, Z21, Z22, Z23)

// LOAD_ACC and STORE_ACC move the 6 pairs of partial sums (one row of x) at byte OFF from B.
#define LOAD_ACC(B, OFF, A0, A1, A2, A3, A4, A5) \
	VMOVUPS OFF+0(B), A0; \
	VMOVUPS OFF+64(B), A1; \
	VMOVUPS OFF+128(B), A2; \
	VMOVUPS OFF+192(B), A3; \
	VMOVUPS OFF+256(B), A4; \
	VMOVUPS OFF+320(B), A5

#define STORE_ACC(B, OFF, A0, A1, A2, A3, A4, A5) \
	VMOVUPS A0, OFF+0(B); \
	VMOVUPS A1, OFF+64(B); \
	VMOVUPS A2, OFF+128(B); \
	VMOVUPS A3, OFF+192(B); \
	VMOVUPS A4, OFF+256(B); \
	VMOVUPS A5, OFF+320(B)

// The fused kernels:
//
//	func gemmTilePackF16AVX512(acc *[12][8]float32, x *float32, xstride, m int, panel *float32, n int, next *gemmNext)
//
// continue the partial sums of m ≥ 0 rows of x (row mi at byte offset mi·xstride from x,
// its sums the mi-th [12][8] block from acc: output j's 8 lanes) against the packed tile of
// 12 weight rows over n elements, n > 0 and a multiple of 8:
//
//	for mi := range m { for j := range 12 { for i := range n {
//		acc[mi][j][i%8] = fma32(x[mi][i], w_j[i], acc[mi][j][i%8])
//	} } }
//
// and widen next.n elements (a multiple of 8, maybe 0) of the 12 rows next.rows into
// next.panel in the packed order. With m = 0 a call only packs.
//
// Blocks of 4 rows of x run with 24 accumulators (Z0-Z23: row r, pair p in Z(6r+p)), each
// step loading the tile's 6 pairs once (Z24-Z29) for the 4 rows: 6 loads and 4 broadcasts
// (Z30) per 24 VFMADD231PS, the first three blocks also 2 pairs of the next k-tile (Z31);
// the last m%4 rows run one at a time (Z0-Z5).
//
// Registers: AX element index, CX n, SI x (row 0), R9-R11 rows 1-3, R8 the tile's step,
// BX scratch; while packing DX, BX, R12, R13 the quarter's rows and DI where its pairs go.
// On the stack: accp (the block's partial sums), left (rows of x left) and quarter (the
// next quarter to pack; 3 when none is left, or when next.n ≠ n leaves them all to the
// tail).
#define TILE_PACK(PAIR, SCALE) \
	MOVQ   acc+0(FP), AX; \
	MOVQ   AX, accp-16(SP); \
	MOVQ   m+24(FP), AX; \
	MOVQ   AX, left-24(SP); \
	MOVQ   x+8(FP), SI; \
	MOVQ   n+40(FP), CX; \
	MOVQ   $0, quarter-32(SP); \
	MOVQ   next+48(FP), AX; \
	CMPQ   gemmNext_n(AX), CX; \
	JE     quad; \
	MOVQ   $3, quarter-32(SP); \
quad: \
	CMPQ   left-24(SP), $4; \
	JB     single; \
	MOVQ   xstride+16(FP), BX; \
	LEAQ   (SI)(BX*1), R9; \
	LEAQ   (SI)(BX*2), R10; \
	LEAQ   (R9)(BX*2), R11; \
	MOVQ   accp-16(SP), BX; \
	LOAD_ACC(BX, 0, Z0, Z1, Z2, Z3, Z4, Z5); \
	LOAD_ACC(BX, 384, Z6, Z7, Z8, Z9, Z10, Z11); \
	LOAD_ACC(BX, 768, Z12, Z13, Z14, Z15, Z16, Z17); \
	LOAD_ACC(BX, 1152, Z18, Z19, Z20, Z21, Z22, Z23); \
	MOVQ   panel+32(FP), R8; \
	CMPQ   quarter-32(SP), $3; \
	JAE    quadplain; \
	QUARTER; \
	INCQ   quarter-32(SP); \
	XORQ   AX, AX; \
quadpack: \
	ROWS4_STEP; \
	PACK_STEP(PAIR, SCALE); \
	ADDQ   $384, R8; \
	ADDQ   $8, AX; \
	CMPQ   AX, CX; \
	JB     quadpack; \
	JMP    quaddone; \
quadplain: \
	XORQ   AX, AX; \
quadloop: \
	ROWS4_STEP; \
	ADDQ   $384, R8; \
	ADDQ   $8, AX; \
	CMPQ   AX, CX; \
	JB     quadloop; \
quaddone: \
	MOVQ   accp-16(SP), BX; \
	STORE_ACC(BX, 0, Z0, Z1, Z2, Z3, Z4, Z5); \
	STORE_ACC(BX, 384, Z6, Z7, Z8, Z9, Z10, Z11); \
	STORE_ACC(BX, 768, Z12, Z13, Z14, Z15, Z16, Z17); \
	STORE_ACC(BX, 1152, Z18, Z19, Z20, Z21, Z22, Z23); \
	ADDQ   $1536, BX; \
	MOVQ   BX, accp-16(SP); \
	MOVQ   xstride+16(FP), BX; \
	LEAQ   (R11)(BX*1), SI; \
	SUBQ   $4, left-24(SP); \
	JMP    quad; \
single: \
	CMPQ   left-24(SP), $0; \
	JE     tail; \
	MOVQ   accp-16(SP), BX; \
	LOAD_ACC(BX, 0, Z0, Z1, Z2, Z3, Z4, Z5); \
	MOVQ   panel+32(FP), R8; \
	XORQ   AX, AX; \
singleloop: \
	LOAD_PAIRS; \
	ROW6(SI, Z0, Z1, Z2, Z3, Z4, Z5); \
	ADDQ   $384, R8; \
	ADDQ   $8, AX; \
	CMPQ   AX, CX; \
	JB     singleloop; \
	MOVQ   accp-16(SP), BX; \
	STORE_ACC(BX, 0, Z0, Z1, Z2, Z3, Z4, Z5); \
	ADDQ   $384, BX; \
	MOVQ   BX, accp-16(SP); \
	ADDQ   xstride+16(FP), SI; \
	DECQ   left-24(SP); \
	JMP    single; \
tail: \
	MOVQ   next+48(FP), AX; \
	MOVQ   gemmNext_n(AX), CX; \
	TESTQ  CX, CX; \
	JZ     done; \
	CMPQ   quarter-32(SP), $3; \
	JNE    tailquarter; \
	CMPQ   CX, n+40(FP); \
	JE     done; \
	MOVQ   $0, quarter-32(SP); \
tailquarter: \
	QUARTER; \
	XORQ   AX, AX; \
tailloop: \
	PACK_STEP(PAIR, SCALE); \
	ADDQ   $8, AX; \
	CMPQ   AX, CX; \
	JB     tailloop; \
	INCQ   quarter-32(SP); \
	CMPQ   quarter-32(SP), $3; \
	JB     tailquarter; \
done: \
	VZEROUPPER; \
	RET

// func gemmTilePackF32AVX512(acc *[12][8]float32, x *float32, xstride, m int, panel *float32, n int, next *gemmNext)
TEXT ·gemmTilePackF32AVX512(SB), NOSPLIT, $32-56
	TILE_PACK(PAIR_F32, 4)

// func gemmTilePackF16AVX512(acc *[12][8]float32, x *float32, xstride, m int, panel *float32, n int, next *gemmNext)
TEXT ·gemmTilePackF16AVX512(SB), NOSPLIT, $32-56
	TILE_PACK(PAIR_F16, 2)

// func gemmTilePackBF16AVX512(acc *[12][8]float32, x *float32, xstride, m int, panel *float32, n int, next *gemmNext)
TEXT ·gemmTilePackBF16AVX512(SB), NOSPLIT, $32-56
	TILE_PACK(PAIR_BF16, 2)

// The lane combine:
//
//	func gemmFinishAVX512(y *float32, ystride int, acc *[12][8]float32, m int)
//
// writes the 12 outputs of each of m ≥ 0 rows of x from their partial sums (row mi's at
// y + mi·ystride bytes, its sums the mi-th [12][8] block from acc), each output j's 8
// lanes a0..a7 combined in combine8's tree:
//
//	y[mi][j] = ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7))
//
// A ZMM register holds outputs 2p (low half) and 2p+1 (high half); three shuffles and
// three adds leave each half's result in its first lane.
//
// Registers: DI y, BX ystride, SI acc, DX rows left; Z0-Z5 the pairs, Z8-Z13 scratch.

// COMBINE_PAIR combines the two outputs in Z (scratch T, X's lane 0 and 4 the results) and
// stores them at OFF and OFF+4 from DI.
#define COMBINE_PAIR(Z, X, T, TX, OFF) \
	VSHUFF32X4   $0xb1, Z, Z, T; \
	VADDPS       T, Z, Z; \
	VPERMILPD    $0x55, Z, T; \
	VADDPS       T, Z, Z; \
	VMOVSHDUP    Z, T; \
	VADDPS       T, Z, Z; \
	VMOVSS       X, OFF(DI); \
	VEXTRACTF32X4 $2, Z, TX; \
	VMOVSS       TX, OFF+4(DI)

// func gemmFinishAVX512(y *float32, ystride int, acc *[12][8]float32, m int)
TEXT ·gemmFinishAVX512(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ ystride+8(FP), BX
	MOVQ acc+16(FP), SI
	MOVQ m+24(FP), DX

finishloop:
	TESTQ DX, DX
	JZ    finishdone
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	VMOVUPS 256(SI), Z4
	VMOVUPS 320(SI), Z5
	COMBINE_PAIR(Z0, X0, Z8, X8, 0)
	COMBINE_PAIR(Z1, X1, Z9, X9, 8)
	COMBINE_PAIR(Z2, X2, Z10, X10, 16)
	COMBINE_PAIR(Z3, X3, Z11, X11, 24)
	COMBINE_PAIR(Z4, X4, Z12, X12, 32)
	COMBINE_PAIR(Z5, X5, Z13, X13, 40)
	ADDQ $384, SI
	ADDQ BX, DI
	DECQ DX
	JMP  finishloop

finishdone:
	VZEROUPPER
	RET
