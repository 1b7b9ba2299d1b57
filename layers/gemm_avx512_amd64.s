//go:build amd64 && !noasm

#include "go_asm.h"
#include "textflag.h"

// The AVX-512 GEMM of LinearRows (gemm_amd64.go): a packing kernel per weight dtype that
// widens 4 weight rows to f32 once (a tile is three such quarters), and one micro-kernel
// that multiplies the packed tile of 12 weight rows with any number of rows of x.
//
// LinearRows' reduction order keeps 8 partial sums per output, element i in lane i%8, each
// product fused into its sum (fma32: one rounding). A ZMM register holds two such 8-lane
// groups, so that one VFMADD231PS advances 2 outputs by 8 elements each: the low half
// output 2p of the tile, the high half output 2p+1, both against the same 8 elements of one
// row of x, which VBROADCASTF64X4 copies into both halves. Every element is one
// VFMADD231PS (the partial sum, x, the weight), as in the AVX2 GEMV (linear_amd64.s):
// bitwise the reference loop's partial sums, and the GEMV's.

// A packed quarter: for each step s of 8 elements, 2 pairs of 16 f32, pair p holding
// elements 8s..8s+7 of weight row 2p and then of row 2p+1 (128 bytes a step). The tile is
// quarters 0 (rows 0-3), 1 (rows 4-7) and 2 (rows 8-11), each of n elements.

// PACK_ROWS points BX, DX, SI, R8 at the 4 weight rows: W + OFF[r]·SCALE.
#define PACK_ROWS(W, OFF, SCALE) \
	MOVQ 0(OFF), BX; \
	LEAQ (W)(BX*SCALE), BX; \
	MOVQ 8(OFF), DX; \
	LEAQ (W)(DX*SCALE), DX; \
	MOVQ 16(OFF), SI; \
	LEAQ (W)(SI*SCALE), SI; \
	MOVQ 24(OFF), R8; \
	LEAQ (W)(R8*SCALE), R8

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

// PACK is the body of a packing kernel: n/8 steps of 2 pairs. Each step also prefetches
// its rows gemmTileK elements ahead, the next k-tile's weights (or the next rows'), so that they
// arrive from DRAM while the micro-kernel runs over this tile (M = 128: 1.03-1.11× the
// cpuGFLOP/s without, BENCHMARKS.md).
#define PACK(PAIR, SCALE) \
	MOVQ panel+0(FP), DI; \
	MOVQ w+8(FP), CX; \
	MOVQ off+16(FP), AX; \
	PACK_ROWS(CX, AX, SCALE); \
	MOVQ n+24(FP), CX; \
	XORQ AX, AX; \
packloop: \
	PREFETCHT0 (const_gemmTileK*SCALE)(BX)(AX*SCALE); \
	PREFETCHT0 (const_gemmTileK*SCALE)(DX)(AX*SCALE); \
	PREFETCHT0 (const_gemmTileK*SCALE)(SI)(AX*SCALE); \
	PREFETCHT0 (const_gemmTileK*SCALE)(R8)(AX*SCALE); \
	PAIR(BX, DX, Z0, Y0, X0); \
	PAIR(SI, R8, Z1, Y1, X1); \
	VMOVUPS Z0, 0(DI); \
	VMOVUPS Z1, 64(DI); \
	ADDQ $128, DI; \
	ADDQ $8, AX; \
	CMPQ AX, CX; \
	JB   packloop; \
	VZEROUPPER; \
	RET

// func gemmPackF32AVX512(panel *float32, w unsafe.Pointer, off *[4]int, n int)
TEXT ·gemmPackF32AVX512(SB), NOSPLIT, $0-32
	PACK(PAIR_F32, 4)

// func gemmPackF16AVX512(panel *float32, w unsafe.Pointer, off *[4]int, n int)
TEXT ·gemmPackF16AVX512(SB), NOSPLIT, $0-32
	PACK(PAIR_F16, 2)

// func gemmPackBF16AVX512(panel *float32, w unsafe.Pointer, off *[4]int, n int)
TEXT ·gemmPackBF16AVX512(SB), NOSPLIT, $0-32
	PACK(PAIR_BF16, 2)

// The micro-kernel:
//
//	func gemmTileAVX512(acc *[12][8]float32, x *float32, xstride, m int, panel *float32, n int)
//
// continues the partial sums of m ≥ 0 rows of x (row mi at byte offset mi·xstride from x,
// its sums the mi-th [12][8] block from acc: output j's 8 lanes) against the packed tile of
// 12 weight rows over n elements, n > 0 and a multiple of 8:
//
//	for mi := range m { for j := range 12 { for i := range n {
//		acc[mi][j][i%8] = fma32(x[mi][i], w_j[i], acc[mi][j][i%8])
//	} } }
//
// Blocks of 4 rows of x run with 24 accumulators (Z0-Z23: row r, pair p in Z(6r+p)), each
// step loading the tile's 6 pairs once (Z24-Z29) for the 4 rows: 6 loads and 4 broadcasts
// (Z30) per 24 VFMADD231PS; the last m%4 rows run one at a time (Z0-Z5). With one
// instruction per product the FMA pipes, not the loads and broadcasts, should set the pace:
// the 2×16 tile of the unfused order (8 loads and 2 broadcasts per 16) ran M = 128 at
// 0.85-0.88× this one's cpuGFLOP/s (BENCHMARKS.md).
//
// Registers: AX element index, CX n, DX rows of x left, BX xstride, SI x (row 0), R9-R11
// rows 1-3, DI acc, R8 the tile's step in quarter 0, R13 a quarter's bytes, R12 the tile.

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
	VMOVUPS 0(R8)(R13*1), Z26; \
	VMOVUPS 64(R8)(R13*1), Z27; \
	VMOVUPS 0(R8)(R13*2), Z28; \
	VMOVUPS 64(R8)(R13*2), Z29

// LOAD_ACC and STORE_ACC move the 6 pairs of partial sums (one row of x) at byte OFF from DI.
#define LOAD_ACC(OFF, A0, A1, A2, A3, A4, A5) \
	VMOVUPS OFF+0(DI), A0; \
	VMOVUPS OFF+64(DI), A1; \
	VMOVUPS OFF+128(DI), A2; \
	VMOVUPS OFF+192(DI), A3; \
	VMOVUPS OFF+256(DI), A4; \
	VMOVUPS OFF+320(DI), A5

#define STORE_ACC(OFF, A0, A1, A2, A3, A4, A5) \
	VMOVUPS A0, OFF+0(DI); \
	VMOVUPS A1, OFF+64(DI); \
	VMOVUPS A2, OFF+128(DI); \
	VMOVUPS A3, OFF+192(DI); \
	VMOVUPS A4, OFF+256(DI); \
	VMOVUPS A5, OFF+320(DI)

// func gemmTileAVX512(acc *[12][8]float32, x *float32, xstride, m int, panel *float32, n int)
TEXT ·gemmTileAVX512(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ xstride+16(FP), BX
	MOVQ m+24(FP), DX
	MOVQ panel+32(FP), R12
	MOVQ n+40(FP), CX
	MOVQ CX, R13
	SHLQ $4, R13 // a quarter's bytes: n/8 steps of 128

quad:
	CMPQ DX, $4
	JB   single
	LEAQ (SI)(BX*1), R9
	LEAQ (SI)(BX*2), R10
	LEAQ (R9)(BX*2), R11
	LOAD_ACC(0, Z0, Z1, Z2, Z3, Z4, Z5)
	LOAD_ACC(384, Z6, Z7, Z8, Z9, Z10, Z11)
	LOAD_ACC(768, Z12, Z13, Z14, Z15, Z16, Z17)
	LOAD_ACC(1152, Z18, Z19, Z20, Z21, Z22, Z23)
	MOVQ R12, R8
	XORQ AX, AX

quadloop:
	LOAD_PAIRS
	ROW6(SI, Z0, Z1, Z2, Z3, Z4, Z5)
	ROW6(R9, Z6, Z7, Z8, Z9, Z10, Z11)
	ROW6(R10, Z12, Z13, Z14, Z15, Z16, Z17)
	ROW6(R11, Z18, Z19, Z20, Z21, Z22, Z23)
	ADDQ $128, R8
	ADDQ $8, AX
	CMPQ AX, CX
	JB   quadloop
	STORE_ACC(0, Z0, Z1, Z2, Z3, Z4, Z5)
	STORE_ACC(384, Z6, Z7, Z8, Z9, Z10, Z11)
	STORE_ACC(768, Z12, Z13, Z14, Z15, Z16, Z17)
	STORE_ACC(1152, Z18, Z19, Z20, Z21, Z22, Z23)
	ADDQ $1536, DI
	LEAQ (R11)(BX*1), SI
	SUBQ $4, DX
	JMP  quad

single:
	TESTQ DX, DX
	JZ    done
	LOAD_ACC(0, Z0, Z1, Z2, Z3, Z4, Z5)
	MOVQ  R12, R8
	XORQ  AX, AX

singleloop:
	LOAD_PAIRS
	ROW6(SI, Z0, Z1, Z2, Z3, Z4, Z5)
	ADDQ $128, R8
	ADDQ $8, AX
	CMPQ AX, CX
	JB   singleloop
	STORE_ACC(0, Z0, Z1, Z2, Z3, Z4, Z5)
	ADDQ $384, DI
	ADDQ BX, SI
	DECQ DX
	JMP  single

done:
	VZEROUPPER
	RET

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
