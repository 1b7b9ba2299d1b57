//go:build amd64 && !noasm

#include "textflag.h"

// The AVX-512 GEMM of LinearRows (gemm_amd64.go): a packing kernel per weight dtype that
// widens 8 weight rows to f32 once (a tile is two such halves), and one micro-kernel that
// multiplies the packed tile of 16 weight rows with any number of rows of x.
//
// LinearRows' reduction order keeps 8 partial sums per output, element i in lane i%8, each
// product fused into its sum (fma32: one rounding). A ZMM register holds two such 8-lane
// groups, so that one VFMADD231PS advances 2 outputs by 8 elements each: the low half
// output 2p of the tile, the high half output 2p+1, both against the same 8 elements of one
// row of x, which VBROADCASTF64X4 copies into both halves. Every element is one
// VFMADD231PS (the partial sum, x, the weight), as in the AVX2 GEMV (linear_amd64.s):
// bitwise the reference loop's partial sums, and the GEMV's.

// A packed half: for each step s of 8 elements, 4 pairs of 16 f32, pair p holding elements
// 8s..8s+7 of weight row 2p and then of row 2p+1 (256 bytes a step). The tile is half A
// (rows 0-7) followed by half B (rows 8-15), each of n elements.

// PACK_ROWS points BX, DX, SI, R8-R12 at the 8 weight rows: W + OFF[r]·SCALE.
#define PACK_ROWS(W, OFF, SCALE) \
	MOVQ 0(OFF), BX; \
	LEAQ (W)(BX*SCALE), BX; \
	MOVQ 8(OFF), DX; \
	LEAQ (W)(DX*SCALE), DX; \
	MOVQ 16(OFF), SI; \
	LEAQ (W)(SI*SCALE), SI; \
	MOVQ 24(OFF), R8; \
	LEAQ (W)(R8*SCALE), R8; \
	MOVQ 32(OFF), R9; \
	LEAQ (W)(R9*SCALE), R9; \
	MOVQ 40(OFF), R10; \
	LEAQ (W)(R10*SCALE), R10; \
	MOVQ 48(OFF), R11; \
	LEAQ (W)(R11*SCALE), R11; \
	MOVQ 56(OFF), R12; \
	LEAQ (W)(R12*SCALE), R12

// The pair loads: elements AX..AX+7 of rows R0 and R1, widened to f32 in the low and high
// halves of Z (Y, X: its lower 256 and 128 bits).
#define PAIR_F32(R0, R1, Z, Y, X) \
	VMOVUPS      (R0)(AX*4), Y; \
	VINSERTF64X4 $1, (R1)(AX*4), Z, Z

#define PAIR_F16(R0, R1, Z, Y, X) \
	VMOVDQU    (R0)(AX*2), X; \
	VINSERTI128 $1, (R1)(AX*2), Y, Y; \
	VCVTPH2PS  Y, Z

#define PAIR_BF16(R0, R1, Z, Y, X) \
	VMOVDQU    (R0)(AX*2), X; \
	VINSERTI128 $1, (R1)(AX*2), Y, Y; \
	VPMOVZXWD  Y, Z; \
	VPSLLD     $16, Z, Z

// PACK is the body of a packing kernel: n/8 steps of 4 pairs.
#define PACK(PAIR, SCALE) \
	MOVQ panel+0(FP), DI; \
	MOVQ w+8(FP), CX; \
	MOVQ off+16(FP), AX; \
	PACK_ROWS(CX, AX, SCALE); \
	MOVQ n+24(FP), CX; \
	XORQ AX, AX; \
packloop: \
	PAIR(BX, DX, Z0, Y0, X0); \
	PAIR(SI, R8, Z1, Y1, X1); \
	PAIR(R9, R10, Z2, Y2, X2); \
	PAIR(R11, R12, Z3, Y3, X3); \
	VMOVUPS Z0, 0(DI); \
	VMOVUPS Z1, 64(DI); \
	VMOVUPS Z2, 128(DI); \
	VMOVUPS Z3, 192(DI); \
	ADDQ $256, DI; \
	ADDQ $8, AX; \
	CMPQ AX, CX; \
	JB   packloop; \
	VZEROUPPER; \
	RET

// func gemmPackF32AVX512(panel *float32, w unsafe.Pointer, off *[8]int, n int)
TEXT ·gemmPackF32AVX512(SB), NOSPLIT, $0-32
	PACK(PAIR_F32, 4)

// func gemmPackF16AVX512(panel *float32, w unsafe.Pointer, off *[8]int, n int)
TEXT ·gemmPackF16AVX512(SB), NOSPLIT, $0-32
	PACK(PAIR_F16, 2)

// func gemmPackBF16AVX512(panel *float32, w unsafe.Pointer, off *[8]int, n int)
TEXT ·gemmPackBF16AVX512(SB), NOSPLIT, $0-32
	PACK(PAIR_BF16, 2)

// The micro-kernel:
//
//	func gemmTileAVX512(acc *[16][8]float32, x *float32, xstride, m int, panel *float32, n int)
//
// continues the partial sums of m ≥ 0 rows of x (row mi at byte offset mi·xstride from x,
// its sums the mi-th [16][8] block from acc: output j's 8 lanes) against the packed tile of
// 16 weight rows over n elements, n > 0 and a multiple of 8:
//
//	for mi := range m { for j := range 16 { for i := range n {
//		acc[mi][j][i%8] = fma32(x[mi][i], w_j[i], acc[mi][j][i%8])
//	} } }
//
// Blocks of 2 rows of x run with 16 accumulators (Z0-Z15: row r, pair p in Z(8r+p)), each
// step loading the tile's 8 pairs once (Z16-Z23) for the 2 rows; a last odd row runs alone
// (Z0-Z7). Two rows by 16 outputs, not 4 by 8, because the broadcast of x takes a slot of
// the FP pipes that the VFMADD231PS need: one broadcast per 8 of them instead of 4.
//
// Registers: AX element index, CX n, DX rows of x left, BX xstride, SI x (row 0), R9 row 1,
// DI acc, R8 the tile's step in half A, R13 half B's byte offset from half A, R12 the tile.

// ROW8 fuses the products of the broadcast 8 elements of x at R (into Z24) and the 8 pairs
// into A0-A7.
#define ROW8(R, A0, A1, A2, A3, A4, A5, A6, A7) \
	VBROADCASTF64X4 (R)(AX*4), Z24; \
	VFMADD231PS     Z16, Z24, A0; \
	VFMADD231PS     Z17, Z24, A1; \
	VFMADD231PS     Z18, Z24, A2; \
	VFMADD231PS     Z19, Z24, A3; \
	VFMADD231PS     Z20, Z24, A4; \
	VFMADD231PS     Z21, Z24, A5; \
	VFMADD231PS     Z22, Z24, A6; \
	VFMADD231PS     Z23, Z24, A7

#define LOAD_PAIRS \
	VMOVUPS 0(R8), Z16; \
	VMOVUPS 64(R8), Z17; \
	VMOVUPS 128(R8), Z18; \
	VMOVUPS 192(R8), Z19; \
	VMOVUPS 0(R8)(R13*1), Z20; \
	VMOVUPS 64(R8)(R13*1), Z21; \
	VMOVUPS 128(R8)(R13*1), Z22; \
	VMOVUPS 192(R8)(R13*1), Z23

// LOAD_ACC and STORE_ACC move the 8 pairs of partial sums (one row of x) at byte OFF from DI.
#define LOAD_ACC(OFF, A0, A1, A2, A3, A4, A5, A6, A7) \
	VMOVUPS OFF+0(DI), A0; \
	VMOVUPS OFF+64(DI), A1; \
	VMOVUPS OFF+128(DI), A2; \
	VMOVUPS OFF+192(DI), A3; \
	VMOVUPS OFF+256(DI), A4; \
	VMOVUPS OFF+320(DI), A5; \
	VMOVUPS OFF+384(DI), A6; \
	VMOVUPS OFF+448(DI), A7

#define STORE_ACC(OFF, A0, A1, A2, A3, A4, A5, A6, A7) \
	VMOVUPS A0, OFF+0(DI); \
	VMOVUPS A1, OFF+64(DI); \
	VMOVUPS A2, OFF+128(DI); \
	VMOVUPS A3, OFF+192(DI); \
	VMOVUPS A4, OFF+256(DI); \
	VMOVUPS A5, OFF+320(DI); \
	VMOVUPS A6, OFF+384(DI); \
	VMOVUPS A7, OFF+448(DI)

// func gemmTileAVX512(acc *[16][8]float32, x *float32, xstride, m int, panel *float32, n int)
TEXT ·gemmTileAVX512(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ xstride+16(FP), BX
	MOVQ m+24(FP), DX
	MOVQ panel+32(FP), R12
	MOVQ n+40(FP), CX
	MOVQ CX, R13
	SHLQ $5, R13 // half A's bytes: n/8 steps of 256

pair:
	CMPQ DX, $2
	JB   single
	LEAQ (SI)(BX*1), R9
	LOAD_ACC(0, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	LOAD_ACC(512, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	MOVQ R12, R8
	XORQ AX, AX

pairloop:
	LOAD_PAIRS
	ROW8(SI, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ROW8(R9, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	ADDQ $256, R8
	ADDQ $8, AX
	CMPQ AX, CX
	JB   pairloop
	STORE_ACC(0, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	STORE_ACC(512, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	ADDQ $1024, DI
	LEAQ (R9)(BX*1), SI
	SUBQ $2, DX
	JMP  pair

single:
	TESTQ DX, DX
	JZ    done
	LOAD_ACC(0, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	MOVQ  R12, R8
	XORQ  AX, AX

singleloop:
	LOAD_PAIRS
	ROW8(SI, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ $256, R8
	ADDQ $8, AX
	CMPQ AX, CX
	JB   singleloop
	STORE_ACC(0, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)

done:
	VZEROUPPER
	RET

// The lane combine:
//
//	func gemmFinishAVX512(y *float32, ystride int, acc *[16][8]float32, m int)
//
// writes the 16 outputs of each of m ≥ 0 rows of x from their partial sums (row mi's at
// y + mi·ystride bytes, its sums the mi-th [16][8] block from acc), each output j's 8
// lanes a0..a7 combined in combine8's tree:
//
//	y[mi][j] = ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7))
//
// A ZMM register holds outputs 2p (low half) and 2p+1 (high half); three shuffles and
// three adds leave each half's result in its first lane.
//
// Registers: DI y, BX ystride, SI acc, DX rows left; Z0-Z7 the pairs, Z8-Z15 scratch.

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

// func gemmFinishAVX512(y *float32, ystride int, acc *[16][8]float32, m int)
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
	VMOVUPS 384(SI), Z6
	VMOVUPS 448(SI), Z7
	COMBINE_PAIR(Z0, X0, Z8, X8, 0)
	COMBINE_PAIR(Z1, X1, Z9, X9, 8)
	COMBINE_PAIR(Z2, X2, Z10, X10, 16)
	COMBINE_PAIR(Z3, X3, Z11, X11, 24)
	COMBINE_PAIR(Z4, X4, Z12, X12, 32)
	COMBINE_PAIR(Z5, X5, Z13, X13, 40)
	COMBINE_PAIR(Z6, X6, Z14, X14, 48)
	COMBINE_PAIR(Z7, X7, Z15, X15, 56)
	ADDQ $512, SI
	ADDQ BX, DI
	DECQ DX
	JMP  finishloop

finishdone:
	VZEROUPPER
	RET
