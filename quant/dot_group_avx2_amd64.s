//go:build amd64 && !noasm

#include "textflag.h"
#include "spread_amd64.h"

// AVX2 kernels of Dot for the grouped layouts, for CPUs without AVX-512: the contract of
// dot_group_avx512_amd64.s,
//
//	func dot<T>GroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)
//
// in 32-byte registers: each quad's 32 bytes split into the low nibbles (rows 0-7) and the
// high ones (rows 8-15), VPMADDUBSW with the broadcast activations (u8 × s8 pairs, at most
// 2·15·128 in magnitude) and VPMADDWD with ones summing each row's four products into its
// int32 lane. Y8/Y9 (lo/hi plane) gather rows 0-7, Y10/Y11 rows 8-15, Y14/Y15 the rows'
// sums. Registers as the AVX-512 kernels: DI y, SI the group, CX groups left, DX a, R8 n,
// R9 the block, R11 the planes, R12 their scales, R13 their sums, R14 blocks left. Q8_0's
// and Q4_0's kernels read several groups in lockstep (below), Q4_K's sums its quads'
// products as words (K4SUBW2).

DATA g2bytes0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA g2bytes0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA g2bytes0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA g2bytes0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL g2bytes0f<>(SB), RODATA|NOPTR, $32
DATA g2ones<>+0(SB)/8, $0x0001000100010001
DATA g2ones<>+8(SB)/8, $0x0001000100010001
DATA g2ones<>+16(SB)/8, $0x0001000100010001
DATA g2ones<>+24(SB)/8, $0x0001000100010001
GLOBL g2ones<>(SB), RODATA|NOPTR, $32

// DWORDS8(NAME, V) fills 32 bytes at NAME with 8 dwords V.
#define DWORDS8(NAME, V) \
	DATA NAME+0(SB)/8, $(V*0x100000001); \
	DATA NAME+8(SB)/8, $(V*0x100000001); \
	DATA NAME+16(SB)/8, $(V*0x100000001); \
	DATA NAME+24(SB)/8, $(V*0x100000001); \
	GLOBL NAME(SB), RODATA|NOPTR, $32

DWORDS8(g2dwords63<>, 63)
DWORDS8(g2dwords15<>, 15)
DWORDS8(g2dwords48<>, 48)

DATA g2f64x256<>+0(SB)/8, $256.0
DATA g2f64x256<>+8(SB)/8, $256.0
DATA g2f64x256<>+16(SB)/8, $256.0
DATA g2f64x256<>+24(SB)/8, $256.0
GLOBL g2f64x256<>(SB), RODATA|NOPTR, $32

// GHALF2(V, AL, AH, ACCL, ACCH): the quad's bytes of 8 rows in V with the broadcast
// activations AL, AH.
#define GHALF2(V, AL, AH, ACCL, ACCH) \
	VPMADDUBSW AL, V, Y4; \
	VPMADDWD   g2ones<>(SB), Y4, Y4; \
	VPADDD     Y4, ACCL, ACCL; \
	VPMADDUBSW AH, V, Y5; \
	VPMADDWD   g2ones<>(SB), Y5, Y5; \
	VPADDD     Y5, ACCH, ACCH

// GQUAD2(WOFF, AOFF, HI): the quad at WOFF(R9) with the activations AOFF(R11) (lo plane)
// and HI+AOFF(R11) (hi plane).
#define GQUAD2(WOFF, AOFF, HI) \
	VMOVDQU      WOFF(R9), Y0; \
	VPAND        g2bytes0f<>(SB), Y0, Y1; \
	VPSRLW       $4, Y0, Y0; \
	VPAND        g2bytes0f<>(SB), Y0, Y0; \
	VPBROADCASTD AOFF(R11), Y2; \
	VPBROADCASTD (HI+AOFF)(R11), Y3; \
	GHALF2(Y1, Y2, Y3, Y8, Y9); \
	GHALF2(Y0, Y2, Y3, Y10, Y11)

#define GZERO2 \
	VPXOR Y8, Y8, Y8; \
	VPXOR Y9, Y9, Y9; \
	VPXOR Y10, Y10, Y10; \
	VPXOR Y11, Y11, Y11

#define GSETUP2 \
	MOVQ y+0(FP), DI; \
	MOVQ w+8(FP), SI; \
	MOVQ groups+16(FP), CX; \
	MOVQ a+24(FP), DX; \
	MOVQ n+32(FP), R8

#define GROW2(PLANESHIFT) \
	MOVQ   SI, R9; \
	MOVQ   DX, R11; \
	MOVQ   R8, R12; \
	SHLQ   $PLANESHIFT, R12; \
	ADDQ   DX, R12; \
	LEAQ   (R12)(R8*4), R13; \
	MOVQ   R8, R14; \
	VXORPS Y14, Y14, Y14; \
	VXORPS Y15, Y15, Y15

#define GNEXT2(BB, PLANES, SUMS) \
	ADDQ $BB, R9; \
	ADDQ $PLANES, R11; \
	ADDQ $4, R12; \
	ADDQ $SUMS, R13; \
	DECQ R14

#define GEND2 \
	VMOVUPS Y14, (DI); \
	VMOVUPS Y15, 32(DI); \
	ADDQ    $64, DI; \
	MOVQ    R9, SI; \
	DECQ    CX

// PREFETCH2(OFF) and LINES6_2(OFF) prefetch [OFF, OFF+256) and [OFF, OFF+384) of the
// group, as PREFETCH and LINES6 of the AVX-512 kernels do.
#define PREFETCH2(OFF) \
	PREFETCHT0 (OFF)(R9); \
	PREFETCHT0 (OFF+64)(R9); \
	PREFETCHT0 (OFF+128)(R9); \
	PREFETCHT0 (OFF+192)(R9)

#define LINES6_2(OFF) \
	PREFETCH2(OFF); \
	PREFETCHT0 (OFF+256)(R9); \
	PREFETCHT0 (OFF+320)(R9)

// GSCALE2(ISUM, DW, SUM): the isum of 8 rows (int32), scaled by their scales (f16 at DW)
// times da (Y7, broadcast) and added to SUM.
#define GSCALE2(ISUM, DW, SUM) \
	VCVTDQ2PS ISUM, ISUM; \
	VCVTPH2PS DW, Y4; \
	VMULPS    Y7, Y4, Y4; \
	VMULPS    Y4, ISUM, ISUM; \
	VADDPS    ISUM, SUM, SUM

// G4FINISH2(ACCL, ACCH, DW, SUM): Q4_0's isum = 256·hi + lo - 8·s of 8 rows (Y6: 8·s
// broadcast), scaled and added to SUM.
#define G4FINISH2(ACCL, ACCH, DW, SUM) \
	VPSLLD    $8, ACCH, ACCH; \
	VPADDD    ACCH, ACCL, ACCL; \
	VPSUBD    Y6, ACCL, ACCL; \
	GSCALE2(ACCL, DW, SUM)

// Q8_0: bytes times words. The quad's four activations are rebuilt as words q = 256·hi +
// lo (exact: |q| ≤ 32639) and repeated four times in Y2; each 16 bytes of the quad (four
// rows) widen to words (VPMOVSXBW) and meet them in VPMADDWD, leaving each row's two pair
// sums in adjacent dwords of Y8 (rows 0-3), Y9, Y10, Y11 (rows 12-15). Per block, VPHADDD
// and VPERMQ gather the rows' isum = Σ w·q (below 2^28 in magnitude) in order.

// G8QUAD2(K): quad K of the block (G8ACTS2 and G8LQUAD2, below).
#define G8QUAD2(K) \
	G8ACTS2(K, Y2); \
	G8LQUAD2(K, Y2)

// Lockstep (Q8_0: 8 groups, Q4_0: 4): W groups at a time while W are left, the rest one at
// a time, as the AVX-512 kernels do, for the memory streams (one core reads several
// faster than one): block b of each of the W groups, one group after the other, then block
// b+1, each group's prefetch in its own stream. The one-group loops' registers leave none
// for W groups' rows' sums, so those stay in y (zeroed first, then y = y + term a block
// and row, the reference's additions in its order). Registers besides the one-group
// loops': R10 group 0's block, AX the bytes between the W groups and R15 between their
// outputs (SPREAD), BX the groups left in the block.

// GADDY2(TERM, SUM, T): SUM, 8 f32 in y, += TERM through T.
#define GADDY2(TERM, SUM, T) \
	VMOVUPS SUM, T; \
	VADDPS  TERM, T, T; \
	VMOVUPS T, SUM

// GSCALEY2(ISUM, DW, DA, T, SUM) is GSCALE2 into SUM in y, da in DA, through T.
#define GSCALEY2(ISUM, DW, DA, T, SUM) \
	VCVTDQ2PS ISUM, ISUM; \
	VCVTPH2PS DW, T; \
	VMULPS    DA, T, T; \
	VMULPS    T, ISUM, ISUM; \
	GADDY2(ISUM, SUM, T)

// The W groups of a run are spread over the call's first W·c groups (SPREAD,
// spread_amd64.h): each stream reads c groups one after another.
// LOCKSTART2(W, ZEROED) sets up W groups (after GROW2): R10 = SI, the run's outputs zeroed.
#define LOCKSTART2(W, ZEROED) \
	MOVQ   SI, R10; \
	MOVQ   DI, BX; \
	VXORPS Y0, Y0, Y0; \
	MOVQ   $W, R9; \
ZEROED: \
	VMOVUPS Y0, (BX); \
	VMOVUPS Y0, 32(BX); \
	ADDQ    R15, BX; \
	DECQ    R9; \
	JNZ     ZEROED

// LOCKGROUP2(W) starts the block of the W groups: R9 group 0's block, BX = W.
#define LOCKGROUP2(W) \
	MOVQ R10, R9; \
	MOVQ $W, BX

// LOCKNEXTGROUP2 steps to the block of the next of the W groups.
#define LOCKNEXTGROUP2 \
	ADDQ AX, R9; \
	ADDQ R15, DI; \
	DECQ BX

// LOCKNEXTBLOCK2(W, BB, PLANES, SUMS) steps to the next block of the W groups.
#define LOCKNEXTBLOCK2(W, BB, PLANES, SUMS) \
	IMUL3Q $(W), R15, R9; \
	SUBQ   R9, DI; \
	ADDQ $BB, R10; \
	ADDQ $PLANES, R11; \
	ADDQ $4, R12; \
	ADDQ $SUMS, R13; \
	DECQ R14

// LOCKEND2(W) steps to the next run, one group on (R10 has read this one's n blocks).
#define LOCKEND2(W) \
	ADDQ $64, DI; \
	MOVQ R10, SI; \
	SUBQ $W, CX

// Q8_0 in lockstep: the quads' activation words are built once a block, for every group,
// into Y4-Y7 and Y12-Y15.
#define Q8W 8

// G8ACTS2(K, OUT): quad K's activation words into OUT, as G8QUAD2 builds them.
#define G8ACTS2(K, OUT) \
	VPBROADCASTD (4*(K))(R11), X2; \
	VPMOVSXBW    X2, OUT; \
	VPBROADCASTD (32+4*(K))(R11), X3; \
	VPMOVSXBW    X3, Y3; \
	VPSLLW       $8, Y3, Y3; \
	VPADDW       Y3, OUT, OUT

// G8LQUAD2(K, ACTS): quad K times the activation words in ACTS (not Y0 or Y1).
#define G8LQUAD2(K, ACTS) \
	VPMOVSXBW (64*(K))(R9), Y0; \
	VPMADDWD  ACTS, Y0, Y0; \
	VPADDD    Y0, Y8, Y8; \
	VPMOVSXBW (64*(K)+16)(R9), Y1; \
	VPMADDWD  ACTS, Y1, Y1; \
	VPADDD    Y1, Y9, Y9; \
	VPMOVSXBW (64*(K)+32)(R9), Y0; \
	VPMADDWD  ACTS, Y0, Y0; \
	VPADDD    Y0, Y10, Y10; \
	VPMOVSXBW (64*(K)+48)(R9), Y1; \
	VPMADDWD  ACTS, Y1, Y1; \
	VPADDD    Y1, Y11, Y11

// func dotQ8_0GroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ8_0GroupsAVX2(SB), NOSPLIT, $0-40
	GSETUP2
	IMUL3Q $544, R8, AX
	CMPQ   CX, $Q8W
	JB     g8one2
	SPREAD(3)

g8lock2:
	GROW2(6)
	LOCKSTART2(Q8W, g8zero2)

g8lockblock2:
	G8ACTS2(0, Y4)
	G8ACTS2(1, Y5)
	G8ACTS2(2, Y6)
	G8ACTS2(3, Y7)
	G8ACTS2(4, Y12)
	G8ACTS2(5, Y13)
	G8ACTS2(6, Y14)
	G8ACTS2(7, Y15)
	LOCKGROUP2(Q8W)

g8lockgroup2:
	PREFETCH2(4096)
	PREFETCH2(4352)
	PREFETCHT0   4608(R9)
	GZERO2
	G8LQUAD2(0, Y4)
	G8LQUAD2(1, Y5)
	G8LQUAD2(2, Y6)
	G8LQUAD2(3, Y7)
	G8LQUAD2(4, Y12)
	G8LQUAD2(5, Y13)
	G8LQUAD2(6, Y14)
	G8LQUAD2(7, Y15)
	VBROADCASTSS (R12), Y1
	VPHADDD      Y9, Y8, Y8
	VPERMQ       $0xd8, Y8, Y8
	GSCALEY2(Y8, 512(R9), Y1, Y0, (DI))
	VPHADDD      Y11, Y10, Y10
	VPERMQ       $0xd8, Y10, Y10
	GSCALEY2(Y10, 528(R9), Y1, Y2, 32(DI))
	LOCKNEXTGROUP2
	JNZ          g8lockgroup2
	LOCKNEXTBLOCK2(Q8W, 544, 64, 4)
	JNZ          g8lockblock2
	LOCKEND2(Q8W)
	CMPQ         CX, $Q8W
	JAE          g8lock2
	SPREADEND(Q8W)

g8one2:
	TESTQ CX, CX
	JZ    g8done2

g8group2:
	GROW2(6)

g8block2:
	PREFETCH2(4096)
	PREFETCH2(4352)
	PREFETCHT0   4608(R9)
	GZERO2
	G8QUAD2(0)
	G8QUAD2(1)
	G8QUAD2(2)
	G8QUAD2(3)
	G8QUAD2(4)
	G8QUAD2(5)
	G8QUAD2(6)
	G8QUAD2(7)
	VBROADCASTSS (R12), Y7
	VPHADDD      Y9, Y8, Y8
	VPERMQ       $0xd8, Y8, Y8
	GSCALE2(Y8, 512(R9), Y14)
	VPHADDD      Y11, Y10, Y10
	VPERMQ       $0xd8, Y10, Y10
	GSCALE2(Y10, 528(R9), Y15)
	GNEXT2(544, 64, 4)
	JNZ          g8block2
	GEND2
	JNZ          g8group2

g8done2:
	VZEROUPPER
	RET

// Q4_0 in lockstep: 8·s and da broadcast once a block, for every group. A block's
// VPMADDUBSW products are summed as words (GQUADW2) and widened to dwords once, at its
// end: each word is two products of a nibble and an activation byte, at most 2·15·128 =
// 3840 in magnitude, and eight quads' sum at most 30720, so the words stay exact. Y12
// holds 0x0f bytes, Y13 ones.
#define Q4W 4

// GQUADW2(WOFF, AOFF, HI, MASK) is GQUAD2 summing words, MASK holding 0x0f bytes.
#define GQUADW2(WOFF, AOFF, HI, MASK) \
	VMOVDQU      WOFF(R9), Y0; \
	VPAND        MASK, Y0, Y1; \
	VPSRLW       $4, Y0, Y0; \
	VPAND        MASK, Y0, Y0; \
	VPBROADCASTD AOFF(R11), Y2; \
	VPBROADCASTD (HI+AOFF)(R11), Y3; \
	VPMADDUBSW   Y2, Y1, Y4; \
	VPADDW       Y4, Y8, Y8; \
	VPMADDUBSW   Y3, Y1, Y1; \
	VPADDW       Y1, Y9, Y9; \
	VPMADDUBSW   Y2, Y0, Y5; \
	VPADDW       Y5, Y10, Y10; \
	VPMADDUBSW   Y3, Y0, Y0; \
	VPADDW       Y0, Y11, Y11

// GWIDEN2 widens the words of Y8-Y11 to the rows' dwords.
#define GWIDEN2 \
	VPMADDWD Y13, Y8, Y8; \
	VPMADDWD Y13, Y9, Y9; \
	VPMADDWD Y13, Y10, Y10; \
	VPMADDWD Y13, Y11, Y11

// G4FINISHY2(ACCL, ACCH, DW, SUM) is G4FINISH2 into SUM in y.
#define G4FINISHY2(ACCL, ACCH, DW, SUM) \
	VPSLLD $8, ACCH, ACCH; \
	VPADDD ACCH, ACCL, ACCL; \
	VPSUBD Y6, ACCL, ACCL; \
	GSCALEY2(ACCL, DW, Y7, Y4, SUM)

// func dotQ4_0GroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ4_0GroupsAVX2(SB), NOSPLIT, $0-40
	GSETUP2
	IMUL3Q $288, R8, AX
	CMPQ   CX, $Q4W
	JB     g4one2
	SPREAD(2)

	VMOVDQU g2bytes0f<>(SB), Y12
	VMOVDQU g2ones<>(SB), Y13

g4lock2:
	GROW2(6)
	LOCKSTART2(Q4W, g4zero2)

g4lockblock2:
	VPBROADCASTD (R13), Y6
	VPSLLD       $3, Y6, Y6
	VBROADCASTSS (R12), Y7
	LOCKGROUP2(Q4W)

g4lockgroup2:
	PREFETCH2(2048)
	PREFETCHT0 2304(R9)
	GZERO2
	GQUADW2(0, 0, 32, Y12)
	GQUADW2(32, 4, 32, Y12)
	GQUADW2(64, 8, 32, Y12)
	GQUADW2(96, 12, 32, Y12)
	GQUADW2(128, 16, 32, Y12)
	GQUADW2(160, 20, 32, Y12)
	GQUADW2(192, 24, 32, Y12)
	GQUADW2(224, 28, 32, Y12)
	GWIDEN2
	G4FINISHY2(Y8, Y9, 256(R9), (DI))
	G4FINISHY2(Y10, Y11, 272(R9), 32(DI))
	LOCKNEXTGROUP2
	JNZ        g4lockgroup2
	LOCKNEXTBLOCK2(Q4W, 288, 64, 4)
	JNZ        g4lockblock2
	LOCKEND2(Q4W)
	CMPQ       CX, $Q4W
	JAE        g4lock2
	SPREADEND(Q4W)

g4one2:
	TESTQ CX, CX
	JZ    g4done2

g4group2:
	GROW2(6)

g4block2:
	PREFETCH2(2048)
	PREFETCHT0   2304(R9)
	GZERO2
	GQUAD2(0, 0, 32)
	GQUAD2(32, 4, 32)
	GQUAD2(64, 8, 32)
	GQUAD2(96, 12, 32)
	GQUAD2(128, 16, 32)
	GQUAD2(160, 20, 32)
	GQUAD2(192, 24, 32)
	GQUAD2(224, 28, 32)
	VPBROADCASTD (R13), Y6
	VPSLLD       $3, Y6, Y6
	VBROADCASTSS (R12), Y7
	G4FINISH2(Y8, Y9, 256(R9), Y14)
	G4FINISH2(Y10, Y11, 272(R9), Y15)
	GNEXT2(288, 64, 4)
	JNZ          g4block2
	GEND2
	JNZ          g4group2

g4done2:
	VZEROUPPER
	RET

// Q4_K, Q5_K (see dotQ4_KGroupsAVX512): the scaled sums of the super-block's sub-blocks
// gather in Y6/Y7 (lo/hi plane, rows 0-7) and Y12/Y13 (rows 8-15); after the 8
// sub-blocks, the mins' products (m_j times the activations' sum over sub-block j) gather
// in Y8 (rows 0-7) and Y9 (8-15), and isum = 256·hi + lo is formed exactly in f64, four
// rows at a time. BASE is the offset of the transposed scales in the block.

// K4SCLO2(J, H, BASE, SC) and K4SCHI2 leave sub-block J's scales of rows 8H..8H+7 in SC,
// K4MLO2 and K4MHI2 its mins, as K4SUBLO and K4SUBHI of the AVX-512 kernel do (J < 4 and
// J ≥ 4). Clobber Y4, Y5.
#define K4SCLO2(J, H, BASE, SC) \
	VPMOVZXBD (BASE+16*(J)+8*(H))(R9), SC; \
	VPAND     g2dwords63<>(SB), SC, SC

#define K4MLO2(J, H, BASE, M) \
	VPMOVZXBD (BASE+16*((J)+4)+8*(H))(R9), M; \
	VPAND     g2dwords63<>(SB), M, M

#define K4SCHI2(J, H, BASE, SC) \
	VPMOVZXBD (BASE+16*((J)+4)+8*(H))(R9), Y4; \
	VPMOVZXBD (BASE+16*((J)-4)+8*(H))(R9), Y5; \
	VPAND     g2dwords15<>(SB), Y4, SC; \
	VPSRLD    $2, Y5, Y5; \
	VPAND     g2dwords48<>(SB), Y5, Y5; \
	VPOR      Y5, SC, SC

#define K4MHI2(J, H, BASE, M) \
	VPMOVZXBD (BASE+16*((J)+4)+8*(H))(R9), Y4; \
	VPMOVZXBD (BASE+16*(J)+8*(H))(R9), Y5; \
	VPSRLD    $4, Y4, M; \
	VPSRLD    $2, Y5, Y5; \
	VPAND     g2dwords48<>(SB), Y5, Y5; \
	VPOR      Y5, M, M

// Q4KQUAD2(K): quad K of a Q4_K block. Q5KQUAD2(K): of a Q5_K block, whose fifth bits
// (the 64 bits at 2048+8K: the low nibbles' 32, then the high ones') FIFTH8 turns into
// 0x10 bytes: each of 4 bytes spread over 8 (VPSHUFB), tested against its bit.
#define Q4KQUAD2(K) GQUAD2(32*(K), 4*(K), 256)

DATA g2spread<>+0(SB)/8, $0x0000000000000000
DATA g2spread<>+8(SB)/8, $0x0101010101010101
DATA g2spread<>+16(SB)/8, $0x0202020202020202
DATA g2spread<>+24(SB)/8, $0x0303030303030303
GLOBL g2spread<>(SB), RODATA|NOPTR, $32
DATA g2bitsel<>+0(SB)/8, $0x8040201008040201
DATA g2bitsel<>+8(SB)/8, $0x8040201008040201
DATA g2bitsel<>+16(SB)/8, $0x8040201008040201
DATA g2bitsel<>+24(SB)/8, $0x8040201008040201
GLOBL g2bitsel<>(SB), RODATA|NOPTR, $32
DATA g2bytes10<>+0(SB)/8, $0x1010101010101010
DATA g2bytes10<>+8(SB)/8, $0x1010101010101010
DATA g2bytes10<>+16(SB)/8, $0x1010101010101010
DATA g2bytes10<>+24(SB)/8, $0x1010101010101010
GLOBL g2bytes10<>(SB), RODATA|NOPTR, $32

// FIFTH8(OFF, V) adds 16 to the bytes of V whose bits are set in the dword at OFF(R9).
#define FIFTH8(OFF, V) \
	VPBROADCASTD OFF(R9), Y4; \
	VPSHUFB      g2spread<>(SB), Y4, Y4; \
	VPAND        g2bitsel<>(SB), Y4, Y4; \
	VPCMPEQB     g2bitsel<>(SB), Y4, Y4; \
	VPAND        g2bytes10<>(SB), Y4, Y4; \
	VPOR         Y4, V, V

#define Q5KQUAD2(K) Q5QUAD2(K, 2048, 256)

// Q5QUAD2(K, FIFTH, HI): quad K of a block whose fifth bits start at FIFTH and whose
// activations' hi plane is HI bytes after the lo one.
#define Q5QUAD2(K, FIFTH, HI) \
	VMOVDQU      (32*(K))(R9), Y0; \
	VPAND        g2bytes0f<>(SB), Y0, Y1; \
	VPSRLW       $4, Y0, Y0; \
	VPAND        g2bytes0f<>(SB), Y0, Y0; \
	FIFTH8(FIFTH+8*(K), Y1); \
	FIFTH8(FIFTH+8*(K)+4, Y0); \
	VPBROADCASTD (4*(K))(R11), Y2; \
	VPBROADCASTD (HI+4*(K))(R11), Y3; \
	GHALF2(Y1, Y2, Y3, Y8, Y9); \
	GHALF2(Y0, Y2, Y3, Y10, Y11)

// K4QUADS2(J, QUAD, BB): sub-block J's quads into Y8-Y11, prefetching an eighth of the
// block (BB bytes) four blocks ahead.
#define K4QUADS2(J, QUAD, BB) \
	LINES6_2(4*(BB)+(BB)/8*(J)); \
	GZERO2; \
	QUAD(8*(J)); \
	QUAD(8*(J)+1); \
	QUAD(8*(J)+2); \
	QUAD(8*(J)+3); \
	QUAD(8*(J)+4); \
	QUAD(8*(J)+5); \
	QUAD(8*(J)+6); \
	QUAD(8*(J)+7)

// K4SUBW2 is K4SUB2 for Q4_K (QUAD unused): its quads' products summed as words, as
// Q4_0's are in lockstep (GQUADW2, the same bounds), and each pair of words multiplied by
// the row's scale (in both words of its dword) in one VPMADDWD, sc·(w0 + w1): K4SCALE2's
// product without K4QUADS2's VPMADDWD a quad and K4SCALE2's VPMULLD. Q4_K's kernel reads
// 1.2× faster for it (docs/benchmarks/quantized.md, "AVX2 kernels in lockstep"); a second
// group in lockstep gained nothing more, its arithmetic, not its one stream, being what
// bounds it.
#define K4SUBW2(J, QUAD, SCALES, BASE, BB) \
	LINES6_2(4*(BB)+(BB)/8*(J)); \
	GZERO2; \
	GQUADW2(32*(8*(J)), 4*(8*(J)), 256, g2bytes0f<>(SB)); \
	GQUADW2(32*(8*(J)+1), 4*(8*(J)+1), 256, g2bytes0f<>(SB)); \
	GQUADW2(32*(8*(J)+2), 4*(8*(J)+2), 256, g2bytes0f<>(SB)); \
	GQUADW2(32*(8*(J)+3), 4*(8*(J)+3), 256, g2bytes0f<>(SB)); \
	GQUADW2(32*(8*(J)+4), 4*(8*(J)+4), 256, g2bytes0f<>(SB)); \
	GQUADW2(32*(8*(J)+5), 4*(8*(J)+5), 256, g2bytes0f<>(SB)); \
	GQUADW2(32*(8*(J)+6), 4*(8*(J)+6), 256, g2bytes0f<>(SB)); \
	GQUADW2(32*(8*(J)+7), 4*(8*(J)+7), 256, g2bytes0f<>(SB)); \
	SCALES(J, 0, BASE, Y2); \
	SCALES(J, 1, BASE, Y3); \
	VPSLLD   $16, Y2, Y4; \
	VPOR     Y4, Y2, Y2; \
	VPSLLD   $16, Y3, Y5; \
	VPOR     Y5, Y3, Y3; \
	K4SCALEBY(VPMADDWD)

// K4SCALEBY(MUL): the sums Y8-Y11 times the scales of rows 0-7 (Y2) and 8-15 (Y3), MUL
// the multiply (VPMULLD on dwords, VPMADDWD on word pairs), added into Y6, Y7, Y12, Y13;
// K4SCALE2 is the dwords'.
#define K4SCALEBY(MUL) \
	MUL    Y2, Y8, Y8; \
	VPADDD Y8, Y6, Y6; \
	MUL    Y2, Y9, Y9; \
	VPADDD Y9, Y7, Y7; \
	MUL    Y3, Y10, Y10; \
	VPADDD Y10, Y12, Y12; \
	MUL    Y3, Y11, Y11; \
	VPADDD Y11, Y13, Y13

#define K4SCALE2 K4SCALEBY(VPMULLD)

#define K4SUB2(J, QUAD, SCALES, BASE, BB) \
	K4QUADS2(J, QUAD, BB); \
	SCALES(J, 0, BASE, Y2); \
	SCALES(J, 1, BASE, Y3); \
	K4SCALE2

// K4MINS2(J, MINS, BASE): sub-block J's mins (decoded by MINS) times the activations' sum
// over it (g_2J + g_2J+1), into Y8 (rows 0-7) and Y9 (8-15).
#define K4MINS2(J, MINS, BASE) \
	VPBROADCASTD (8*(J))(R13), Y1; \
	VPBROADCASTD (8*(J)+4)(R13), Y0; \
	VPADDD       Y0, Y1, Y1; \
	MINS(J, 0, BASE, Y2); \
	VPMULLD      Y1, Y2, Y2; \
	VPADDD       Y2, Y8, Y8; \
	MINS(J, 1, BASE, Y2); \
	VPMULLD      Y1, Y2, Y2; \
	VPADDD       Y2, Y9, Y9

// ISUM4(HI, LO, OUT): OUT (4 f32) = 256·HI + LO of 4 rows (int32 in XMM), exact in f64
// and rounded once.
#define ISUM4(HI, LO, OUT) \
	VCVTDQ2PD  HI, Y4; \
	VMULPD     g2f64x256<>(SB), Y4, Y4; \
	VCVTDQ2PD  LO, Y5; \
	VADDPD     Y5, Y4, Y4; \
	VCVTPD2PSY Y4, OUT

// K4TERM2(HI, HIX, LO, LOX, M, DOFF, SUM): SUM += float32(dd·isum) - float32(dm·msum) of
// 8 rows: isum from HI and LO (HIX, LOX their low halves), msum M (clobbered), d and dmin
// of the rows at DOFF(R9) and DOFF+32(R9), da broadcast in Y1. Clobbers Y0, Y2-Y5.
#define K4TERM2(HI, HIX, LO, LOX, M, DOFF, SUM) \
	ISUM4(HIX, LOX, X0); \
	VEXTRACTI128 $1, HI, X2; \
	VEXTRACTI128 $1, LO, X3; \
	ISUM4(X2, X3, X2); \
	VINSERTF128  $1, X2, Y0, Y0; \
	VCVTPH2PS    DOFF(R9), Y2; \
	VMULPS       Y1, Y2, Y2; \
	VMULPS       Y2, Y0, Y0; \
	VCVTDQ2PS    M, M; \
	VCVTPH2PS    (DOFF+32)(R9), Y3; \
	VMULPS       Y1, Y3, Y3; \
	VMULPS       Y3, M, M; \
	VSUBPS       M, Y0, Y0; \
	VADDPS       Y0, SUM, SUM

#define KZERO2 \
	VPXOR Y6, Y6, Y6; \
	VPXOR Y7, Y7, Y7; \
	VPXOR Y12, Y12, Y12; \
	VPXOR Y13, Y13, Y13

// K4BLOCK2(QUAD, BASE, BB): a Q4_K or Q5_K super-block, its scales at BASE(R9), its bytes
// BB.
#define K4BLOCK2(QUAD, BASE, BB) \
	K4SUMS2(K4SUB2, QUAD, BASE, BB); \
	VBROADCASTSS (R12), Y1; \
	K4TERM2(Y7, X7, Y6, X6, Y8, BASE+192, Y14); \
	K4TERM2(Y13, X13, Y12, X12, Y9, BASE+208, Y15)

// K4SUMS2(SUB, QUAD, BASE, BB) leaves a super-block's sums in Y6, Y7, Y12, Y13 (scaled)
// and Y8, Y9 (mins), SUB (K4SUB2 or K4SUBW2) taking each sub-block.
#define K4SUMS2(SUB, QUAD, BASE, BB) \
	KZERO2; \
	SUB(0, QUAD, K4SCLO2, BASE, BB); \
	SUB(1, QUAD, K4SCLO2, BASE, BB); \
	SUB(2, QUAD, K4SCLO2, BASE, BB); \
	SUB(3, QUAD, K4SCLO2, BASE, BB); \
	SUB(4, QUAD, K4SCHI2, BASE, BB); \
	SUB(5, QUAD, K4SCHI2, BASE, BB); \
	SUB(6, QUAD, K4SCHI2, BASE, BB); \
	SUB(7, QUAD, K4SCHI2, BASE, BB); \
	VPXOR        Y8, Y8, Y8; \
	VPXOR        Y9, Y9, Y9; \
	K4MINS2(0, K4MLO2, BASE); \
	K4MINS2(1, K4MLO2, BASE); \
	K4MINS2(2, K4MLO2, BASE); \
	K4MINS2(3, K4MLO2, BASE); \
	K4MINS2(4, K4MHI2, BASE); \
	K4MINS2(5, K4MHI2, BASE); \
	K4MINS2(6, K4MHI2, BASE); \
	K4MINS2(7, K4MHI2, BASE)

// K4BLOCKW2(BASE, BB) is K4BLOCK2 for Q4_K with its quads' products summed as words
// (K4SUBW2).
#define K4BLOCKW2(BASE, BB) \
	K4SUMS2(K4SUBW2, Q4KQUAD2, BASE, BB); \
	VBROADCASTSS (R12), Y1; \
	K4TERM2(Y7, X7, Y6, X6, Y8, BASE+192, Y14); \
	K4TERM2(Y13, X13, Y12, X12, Y9, BASE+208, Y15)

// func dotQ4_KGroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ4_KGroupsAVX2(SB), NOSPLIT, $0-40
	GSETUP2

gk4group2:
	GROW2(9)

gk4block2:
	K4BLOCKW2(2048, 2304)
	GNEXT2(2304, 512, 64)
	JNZ gk4block2
	GEND2
	JNZ gk4group2
	VZEROUPPER
	RET

// func dotQ5_KGroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ5_KGroupsAVX2(SB), NOSPLIT, $0-40
	GSETUP2

gk5group2:
	GROW2(9)

gk5block2:
	K4BLOCK2(Q5KQUAD2, 2560, 2816)
	GNEXT2(2816, 512, 64)
	JNZ gk5block2
	GEND2
	JNZ gk5group2
	VZEROUPPER
	RET

// Q6_K (see dotQ6_KGroupsAVX512): a quad's 16 bytes of high bits, broadcast to both
// 128-bit lanes, are shifted per lane so that the bits of the low nibbles' values (lanes:
// bit pairs 0 and 1) and those of the high nibbles' (bit pairs 2 and 3) land at bits 4-5
// (VPSLLVD by 4 and 2, VPSRLVD by 0 and 2), masked by 0x30 and ORed into the nibbles. The
// 16 groups' sums gather in Y6/Y7/Y12/Y13 as Q4_K's do, the scales times the activations'
// sums in Y8/Y9 in a second pass; isum = 256·hi + lo - 32·msum, exact in f64.

DATA g2q6lo<>+0(SB)/8, $0x0000000400000004
DATA g2q6lo<>+8(SB)/8, $0x0000000400000004
DATA g2q6lo<>+16(SB)/8, $0x0000000200000002
DATA g2q6lo<>+24(SB)/8, $0x0000000200000002
GLOBL g2q6lo<>(SB), RODATA|NOPTR, $32
DATA g2q6hi<>+0(SB)/8, $0
DATA g2q6hi<>+8(SB)/8, $0
DATA g2q6hi<>+16(SB)/8, $0x0000000200000002
DATA g2q6hi<>+24(SB)/8, $0x0000000200000002
GLOBL g2q6hi<>(SB), RODATA|NOPTR, $32
DATA g2bytes30<>+0(SB)/8, $0x3030303030303030
DATA g2bytes30<>+8(SB)/8, $0x3030303030303030
DATA g2bytes30<>+16(SB)/8, $0x3030303030303030
DATA g2bytes30<>+24(SB)/8, $0x3030303030303030
GLOBL g2bytes30<>(SB), RODATA|NOPTR, $32
DATA g2f64x32<>+0(SB)/8, $32.0
DATA g2f64x32<>+8(SB)/8, $32.0
DATA g2f64x32<>+16(SB)/8, $32.0
DATA g2f64x32<>+24(SB)/8, $32.0
GLOBL g2f64x32<>(SB), RODATA|NOPTR, $32

#define Q6QUAD2(K) \
	VMOVDQU        (32*(K))(R9), Y0; \
	VPAND          g2bytes0f<>(SB), Y0, Y1; \
	VPSRLW         $4, Y0, Y0; \
	VPAND          g2bytes0f<>(SB), Y0, Y0; \
	VBROADCASTI128 (2048+16*(K))(R9), Y2; \
	VPSLLVD        g2q6lo<>(SB), Y2, Y3; \
	VPAND          g2bytes30<>(SB), Y3, Y3; \
	VPOR           Y3, Y1, Y1; \
	VPSRLVD        g2q6hi<>(SB), Y2, Y3; \
	VPAND          g2bytes30<>(SB), Y3, Y3; \
	VPOR           Y3, Y0, Y0; \
	VPBROADCASTD   (4*(K))(R11), Y2; \
	VPBROADCASTD   (256+4*(K))(R11), Y3; \
	GHALF2(Y1, Y2, Y3, Y8, Y9); \
	GHALF2(Y0, Y2, Y3, Y10, Y11)

#define Q6GROUP2(S) \
	PREFETCH2(3*3360+210*(S)); \
	GZERO2; \
	Q6QUAD2(4*(S)); \
	Q6QUAD2(4*(S)+1); \
	Q6QUAD2(4*(S)+2); \
	Q6QUAD2(4*(S)+3); \
	VPMOVSXBD (3072+16*(S))(R9), Y2; \
	VPMOVSXBD (3072+16*(S)+8)(R9), Y3; \
	K4SCALE2

#define Q6MINS2(S) \
	VPBROADCASTD (4*(S))(R13), Y1; \
	VPMOVSXBD    (3072+16*(S))(R9), Y2; \
	VPMULLD      Y1, Y2, Y2; \
	VPADDD       Y2, Y8, Y8; \
	VPMOVSXBD    (3072+16*(S)+8)(R9), Y2; \
	VPMULLD      Y1, Y2, Y2; \
	VPADDD       Y2, Y9, Y9

// ISUM6(HI, LO, M, OUT): OUT (4 f32) = 256·HI + LO - 32·M of 4 rows, exact in f64 and
// rounded once.
#define ISUM6(HI, LO, M, OUT) \
	VCVTDQ2PD  HI, Y4; \
	VMULPD     g2f64x256<>(SB), Y4, Y4; \
	VCVTDQ2PD  LO, Y5; \
	VADDPD     Y5, Y4, Y4; \
	VCVTDQ2PD  M, Y5; \
	VMULPD     g2f64x32<>(SB), Y5, Y5; \
	VSUBPD     Y5, Y4, Y4; \
	VCVTPD2PSY Y4, OUT

// Q6TERM2(HI, HIX, LO, LOX, M, MX, DOFF, SUM): SUM += float32(dd·isum) of 8 rows, d at
// DOFF(R9). Clobbers Y0-Y5.
#define Q6TERM2(HI, HIX, LO, LOX, M, MX, DOFF, SUM) \
	ISUM6(HIX, LOX, MX, X0); \
	VEXTRACTI128 $1, HI, X2; \
	VEXTRACTI128 $1, LO, X3; \
	VEXTRACTI128 $1, M, X1; \
	ISUM6(X2, X3, X1, X2); \
	VINSERTF128  $1, X2, Y0, Y0; \
	VCVTPH2PS    DOFF(R9), Y2; \
	VBROADCASTSS (R12), Y3; \
	VMULPS       Y3, Y2, Y2; \
	VMULPS       Y2, Y0, Y0; \
	VADDPS       Y0, SUM, SUM

// func dotQ6_KGroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ6_KGroupsAVX2(SB), NOSPLIT, $0-40
	GSETUP2

gk6group2:
	GROW2(9)

gk6block2:
	KZERO2
	Q6GROUP2(0)
	Q6GROUP2(1)
	Q6GROUP2(2)
	Q6GROUP2(3)
	Q6GROUP2(4)
	Q6GROUP2(5)
	Q6GROUP2(6)
	Q6GROUP2(7)
	Q6GROUP2(8)
	Q6GROUP2(9)
	Q6GROUP2(10)
	Q6GROUP2(11)
	Q6GROUP2(12)
	Q6GROUP2(13)
	Q6GROUP2(14)
	Q6GROUP2(15)
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	Q6MINS2(0)
	Q6MINS2(1)
	Q6MINS2(2)
	Q6MINS2(3)
	Q6MINS2(4)
	Q6MINS2(5)
	Q6MINS2(6)
	Q6MINS2(7)
	Q6MINS2(8)
	Q6MINS2(9)
	Q6MINS2(10)
	Q6MINS2(11)
	Q6MINS2(12)
	Q6MINS2(13)
	Q6MINS2(14)
	Q6MINS2(15)
	Q6TERM2(Y7, X7, Y6, X6, Y8, X8, 3328, Y14)
	Q6TERM2(Y13, X13, Y12, X12, Y9, X9, 3344, Y15)
	GNEXT2(3360, 512, 64)
	JNZ gk6block2
	GEND2
	JNZ gk6group2
	VZEROUPPER
	RET

// GSCALEM2(ISUM, DW, MW, SUM) is GSCALE2 plus the min term of the rows' mins at MW, Y6
// holding float32(s) broadcast.
#define GSCALEM2(ISUM, DW, MW, SUM) \
	VCVTDQ2PS ISUM, ISUM; \
	VCVTPH2PS DW, Y4; \
	VMULPS    Y7, Y4, Y4; \
	VMULPS    Y4, ISUM, ISUM; \
	VCVTPH2PS MW, Y4; \
	VMULPS    Y7, Y4, Y4; \
	VMULPS    Y6, Y4, Y4; \
	VADDPS    Y4, ISUM, ISUM; \
	VADDPS    ISUM, SUM, SUM

// G5FINISHM2(ACCL, ACCH, DW, MW, SUM): Q5_1's isum = 256·hi + lo of 8 rows, scaled, its
// min term added (GSCALEM2) and the sum added to SUM.
#define G5FINISHM2(ACCL, ACCH, DW, MW, SUM) \
	VPSLLD $8, ACCH, ACCH; \
	VPADDD ACCH, ACCL, ACCL; \
	GSCALEM2(ACCL, DW, MW, SUM)

// Q5_0, Q5_1 (see dotQ5_0GroupsAVX512): Q5QUAD2's products, at most 2·31·128 a word; then
// Q4_0's finish with 16·s for Q5_0, GSCALEM2's min term for Q5_1. One group at a time.

// Q5SUMS2(BB) sums a Q5_0 or Q5_1 block of the group into Y8-Y11, prefetching four blocks
// ahead (BB bytes a block).
#define Q5SUMS2(BB) \
	LINES6_2(4*(BB)); \
	GZERO2; \
	Q5QUAD2(0, 256, 32); \
	Q5QUAD2(1, 256, 32); \
	Q5QUAD2(2, 256, 32); \
	Q5QUAD2(3, 256, 32); \
	Q5QUAD2(4, 256, 32); \
	Q5QUAD2(5, 256, 32); \
	Q5QUAD2(6, 256, 32); \
	Q5QUAD2(7, 256, 32)

// func dotQ5_0GroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ5_0GroupsAVX2(SB), NOSPLIT, $0-40
	GSETUP2

g50group2:
	GROW2(6)

g50block2:
	Q5SUMS2(352)
	VPBROADCASTD (R13), Y6
	VPSLLD       $4, Y6, Y6
	VBROADCASTSS (R12), Y7
	G4FINISH2(Y8, Y9, 320(R9), Y14)
	G4FINISH2(Y10, Y11, 336(R9), Y15)
	GNEXT2(352, 64, 4)
	JNZ          g50block2
	GEND2
	JNZ          g50group2
	VZEROUPPER
	RET

// func dotQ5_1GroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ5_1GroupsAVX2(SB), NOSPLIT, $0-40
	GSETUP2

g51group2:
	GROW2(6)

g51block2:
	Q5SUMS2(384)
	VPBROADCASTD (R13), Y6
	VCVTDQ2PS    Y6, Y6
	VBROADCASTSS (R12), Y7
	G5FINISHM2(Y8, Y9, 320(R9), 352(R9), Y14)
	G5FINISHM2(Y10, Y11, 336(R9), 368(R9), Y15)
	GNEXT2(384, 64, 4)
	JNZ          g51block2
	GEND2
	JNZ          g51group2
	VZEROUPPER
	RET
