//go:build amd64 && !noasm

#include "textflag.h"
#include "spread_amd64.h"
#include "blocks_avx512_amd64.h"

// AVX-512 (F, BW, VL, VNNI) kernels of Dot for the grouped layouts (group.go), one group
// of 16 rows after another (Q8_0's, Q4_0's and Q4_K's several at once, in lockstep)
// against one row of activations split into byte planes:
//
//	func dot<T>GroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)
//
// y[16g+r] = Dot's reference for row r of group g (at w + g·16·n·BlockBytes), where n ≥ 1
// is the row's blocks and groups ≥ 1. Each quad's 32 bytes spread into 64 (low nibbles:
// rows 0-7, high: rows 8-15; four values a row) meet the quad's four activations of each
// plane, broadcast, in VPDPBUSD (u8 × s8, four products summed into each int32 lane), so
// that lane r gathers row r; the integers are exact and the f32 operations follow the
// reference loop one for one, lane by lane.
//
// Registers: DI y, SI the group, CX groups left, DX a, R8 n; per group R9 the block, R11
// the activations' planes, R12 their scales, R13 their sums, R14 blocks left, Z30 the
// rows' sums; Z29 holds 0x0f bytes (the lockstep loops say what they change).

DATA gdwords63<>+0(SB)/4, $63
GLOBL gdwords63<>(SB), RODATA|NOPTR, $4
DATA gdwords15<>+0(SB)/4, $15
GLOBL gdwords15<>(SB), RODATA|NOPTR, $4
DATA gdwords48<>+0(SB)/4, $48
GLOBL gdwords48<>(SB), RODATA|NOPTR, $4

// GQUAD(WOFF, AOFF, HI) adds the quad at WOFF(R9) times the activations AOFF(R11) (lo
// plane) and HI+AOFF(R11) (hi plane) into Z0 and Z1.
#define GQUAD(WOFF, AOFF, HI) \
	VMOVDQU32     WOFF(R9), Y16; \
	VPSRLW        $4, Y16, Y17; \
	VINSERTI64X4  $1, Y17, Z16, Z16; \
	VPANDD        Z29, Z16, Z16; \
	VPDPBUSD.BCST AOFF(R11), Z16, Z0; \
	VPDPBUSD.BCST (HI+AOFF)(R11), Z16, Z1

// GSETUP loads the arguments; GROW sets up a group whose activations' planes take PLANES
// bytes a block (R12 = a + PLANES·n, R13 = R12 + 4n); GNEXT steps to the next block of BB
// bytes of the group; GEND stores the group's sums and steps to the next group.
#define GSETUP \
	MOVQ         y+0(FP), DI; \
	MOVQ         w+8(FP), SI; \
	MOVQ         groups+16(FP), CX; \
	MOVQ         a+24(FP), DX; \
	MOVQ         n+32(FP), R8; \
	VPBROADCASTD gbytes0f<>(SB), Z29

#define GROW(PLANESHIFT) \
	MOVQ   SI, R9; \
	MOVQ   DX, R11; \
	MOVQ   R8, R12; \
	SHLQ   $PLANESHIFT, R12; \
	ADDQ   DX, R12; \
	LEAQ   (R12)(R8*4), R13; \
	MOVQ   R8, R14; \
	VPXORD Z30, Z30, Z30

#define GNEXT(BB, PLANES, SUMS) \
	ADDQ $BB, R9; \
	ADDQ $PLANES, R11; \
	ADDQ $4, R12; \
	ADDQ $SUMS, R13; \
	DECQ R14

#define GEND \
	VMOVUPS Z30, (DI); \
	ADDQ    $64, DI; \
	MOVQ    R9, SI; \
	DECQ    CX

// PREFETCH(OFF) prefetches the cache lines of [OFF, OFF+256) of the group, LINES6 those of
// [OFF, OFF+384). The kernels prefetch about 10 KiB ahead, a sub-block's bytes at a time:
// the hardware prefetchers alone leave them 1.5× slower (BenchmarkDot/14336x4096).
#define PREFETCH(OFF) \
	PREFETCHT0 (OFF)(R9); \
	PREFETCHT0 (OFF+64)(R9); \
	PREFETCHT0 (OFF+128)(R9); \
	PREFETCHT0 (OFF+192)(R9)

#define LINES6(OFF) \
	PREFETCH(OFF); \
	PREFETCHT0 (OFF+256)(R9); \
	PREFETCHT0 (OFF+320)(R9)

// Nibble quads split in one instruction: a quad's 32 bytes broadcast to both halves of a
// register (VBROADCASTI64X4, a load) and ANDed with Z29's [0x0f × 32 | 0xf0 × 32] leave
// rows 0-7's values in the low half and 16 times rows 8-15's in the high half, where one
// VPDPBUSD takes them as the three-instruction split (shift, insert, mask) of GQUAD does.
// Lanes 8-15 of a block's integer sum are then exact multiples of 16 (Q4_0's below 2^29),
// and VPSRAVD by gnibshift (0 in lanes 0-7, 4 in 8-15) divides them back exactly.

// NQUAD(WADDR, T, AL, AH, LO, HI) adds the nibble quad at WADDR times the broadcast
// activations AL (lo plane) and AH (hi plane) into LO and HI, through T.
#define NQUAD(WADDR, T, AL, AH, LO, HI) \
	VBROADCASTI64X4 WADDR, T; \
	VPANDD          Z29, T, T; \
	VPDPBUSD        AL, T, LO; \
	VPDPBUSD        AH, T, HI

// Q4_0: per block of 32, isum_r = 256·hi + lo - 8·s (exact: below 2^25) is scaled by
// float32(dw_r·da) and added to row r's sum. Q4_0 and Q8_0 read eight groups in lockstep
// while eight are left, the rest one at a time: one core reads eight streams of weights
// 1.3-1.5× faster than one (docs/benchmarks/quantized.md, "Reading several groups at
// once"; BenchmarkDotLockstep), the eight spread over the call (SPREAD). Registers of
// the eight: R9 group 0, R10 group 1, BX group 6, AX the bytes between them (the others
// at R9 or R10 + 2·AX or 4·AX, and BX + AX), R15 the bytes between their outputs; Z0-Z15
// the groups' lo and hi sums of the block, Z16-Z23 the rows' sums, Z24/Z25 the quad's
// activations, Z26-Z28, Z30, Z31 temps, Z29 the kernel's byte mask (gnibmask, or 0x80
// bytes for Q8_0).

// OCTQUAD(K, QUAD) adds quad K of the eight groups' blocks, QUAD(K, G, T, LO, HI) adding
// that of the group at G into LO and HI through T.
#define OCTQUAD(K, QUAD) \
	VPBROADCASTD (4*(K))(R11), Z24; \
	VPBROADCASTD (32+4*(K))(R11), Z25; \
	QUAD(K, (R9), Z26, Z0, Z1); \
	QUAD(K, (R10), Z27, Z2, Z3); \
	QUAD(K, (R9)(AX*2), Z26, Z4, Z5); \
	QUAD(K, (R10)(AX*2), Z27, Z6, Z7); \
	QUAD(K, (R9)(AX*4), Z26, Z8, Z9); \
	QUAD(K, (R10)(AX*4), Z27, Z10, Z11); \
	QUAD(K, (BX), Z26, Z12, Z13); \
	QUAD(K, (BX)(AX*1), Z27, Z14, Z15)

#define Q4OCTQUAD(K, G, T, LO, HI) NQUAD((32*(K))G, T, Z24, Z25, LO, HI)

#define Q8OCTQUAD(K, G, T, LO, HI) \
	VPXORD   (64*(K))G, Z29, T; \
	VPDPBUSD Z24, T, LO; \
	VPDPBUSD Z25, T, HI

// OCTPF(PF) prefetches, PF(G) for the group at G.
#define OCTPF(PF) \
	PF((R9)); \
	PF((R10)); \
	PF((R9)(AX*2)); \
	PF((R10)(AX*2)); \
	PF((R9)(AX*4)); \
	PF((R10)(AX*4)); \
	PF((BX)); \
	PF((BX)(AX*1))

// Q4PF(G) and Q8PF(G) prefetch the lines of the block four blocks ahead of the group at G.
#define Q4PF(G) \
	PREFETCHT0 1152 G; \
	PREFETCHT0 1216 G; \
	PREFETCHT0 1280 G; \
	PREFETCHT0 1344 G; \
	PREFETCHT0 1408 G

#define Q8PF(G) \
	PREFETCHT0 2176 G; \
	PREFETCHT0 2240 G; \
	PREFETCHT0 2304 G; \
	PREFETCHT0 2368 G; \
	PREFETCHT0 2432 G; \
	PREFETCHT0 2496 G; \
	PREFETCHT0 2560 G; \
	PREFETCHT0 2624 G; \
	PREFETCHT0 2688 G

// GTERM(LO, HI, ACC, G, T, FIX, D): ACC += float32(dw·da)·float32(isum) for the block of
// the group at G, its scales at D G; isum = FIX(256·HI + LO) - Z24, Z25 holding da. FIX is
// NIBFIX for split nibbles (NQUAD), NOFIX otherwise.
#define GTERM(LO, HI, ACC, G, T, FIX, D) \
	VPSLLD    $8, HI, HI; \
	VPADDD    HI, LO, LO; \
	FIX(LO); \
	VPSUBD    Z24, LO, LO; \
	VCVTDQ2PS LO, LO; \
	VCVTPH2PS D G, T; \
	VMULPS    Z25, T, T; \
	VMULPS    T, LO, LO; \
	VADDPS    LO, ACC, ACC

#define NIBFIX(R) VPSRAVD gnibshift<>(SB), R, R
#define NOFIX(R)

// GSUMS(SHIFT) loads Z24 = s << SHIFT and Z25 = da for the block.
#define GSUMS(SHIFT) \
	VPBROADCASTD (R13), Z24; \
	VPSLLD       $SHIFT, Z24, Z24; \
	VBROADCASTSS (R12), Z25

// OCTBLOCK(QUAD, PF, FIX, SHIFT, D) is a block of the eight groups.
#define OCTBLOCK(QUAD, PF, FIX, SHIFT, D) \
	OCTPF(PF); \
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7); \
	ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15); \
	OCTQUAD(0, QUAD); \
	OCTQUAD(1, QUAD); \
	OCTQUAD(2, QUAD); \
	OCTQUAD(3, QUAD); \
	OCTQUAD(4, QUAD); \
	OCTQUAD(5, QUAD); \
	OCTQUAD(6, QUAD); \
	OCTQUAD(7, QUAD); \
	GSUMS(SHIFT); \
	GTERM(Z0, Z1, Z16, (R9), Z26, FIX, D); \
	GTERM(Z2, Z3, Z17, (R10), Z27, FIX, D); \
	GTERM(Z4, Z5, Z18, (R9)(AX*2), Z28, FIX, D); \
	GTERM(Z6, Z7, Z19, (R10)(AX*2), Z30, FIX, D); \
	GTERM(Z8, Z9, Z20, (R9)(AX*4), Z31, FIX, D); \
	GTERM(Z10, Z11, Z21, (R10)(AX*4), Z26, FIX, D); \
	GTERM(Z12, Z13, Z22, (BX), Z27, FIX, D); \
	GTERM(Z14, Z15, Z23, (BX)(AX*1), Z28, FIX, D)

// OCTSETUP sets up eight groups (after GROW); OCTEND stores their sums and steps to the
// next run (one group on: R9 has read this one's n blocks).
#define OCTSETUP \
	LEAQ (SI)(AX*1), R10; \
	LEAQ (AX)(AX*2), BX; \
	LEAQ (SI)(BX*2), BX; \
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)

#define OCTEND \
	VMOVUPS Z16, (DI); \
	VMOVUPS Z17, (DI)(R15*1); \
	VMOVUPS Z18, (DI)(R15*2); \
	LEAQ    (DI)(R15*2), R10; \
	VMOVUPS Z19, (R10)(R15*1); \
	VMOVUPS Z20, (DI)(R15*4); \
	LEAQ    (DI)(R15*4), R10; \
	VMOVUPS Z21, (R10)(R15*1); \
	VMOVUPS Z22, (R10)(R15*2); \
	LEAQ    (R10)(R15*2), R10; \
	VMOVUPS Z23, (R10)(R15*1); \
	ADDQ    $64, DI; \
	MOVQ    R9, SI; \
	SUBQ    $8, CX

#define ZERO8(A, B, C, D, E, F, G, H) \
	VPXORD A, A, A; \
	VPXORD B, B, B; \
	VPXORD C, C, C; \
	VPXORD D, D, D; \
	VPXORD E, E, E; \
	VPXORD F, F, F; \
	VPXORD G, G, G; \
	VPXORD H, H, H

// func dotQ4_0GroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ4_0GroupsAVX512(SB), NOSPLIT, $0-40
	GSETUP
	VMOVDQU32 gnibmask<>(SB), Z29
	IMUL3Q    $288, R8, AX
	CMPQ      CX, $8
	JB        g4group
	SPREAD(3)

g4eight:
	GROW(6)
	OCTSETUP

g4eightblock:
	OCTBLOCK(Q4OCTQUAD, Q4PF, NIBFIX, 3, 256)
	ADDQ $288, R10
	ADDQ $288, BX
	GNEXT(288, 64, 4)
	JNZ  g4eightblock
	OCTEND
	CMPQ CX, $8
	JAE  g4eight
	SPREADEND(8)

// One group: the quads alternate between two pairs of sums, halving their chains.
g4group:
	TESTQ CX, CX
	JZ    g4done
	GROW(6)

g4block:
	PREFETCH(2048)
	PREFETCHT0 2304(R9)
	VPXORD  Z0, Z0, Z0
	VPXORD  Z1, Z1, Z1
	VPXORD  Z2, Z2, Z2
	VPXORD  Z3, Z3, Z3
	VPBROADCASTD 0(R11), Z4
	VPBROADCASTD 32(R11), Z5
	NQUAD(0(R9), Z16, Z4, Z5, Z0, Z1)
	VPBROADCASTD 4(R11), Z6
	VPBROADCASTD 36(R11), Z7
	NQUAD(32(R9), Z17, Z6, Z7, Z2, Z3)
	VPBROADCASTD 8(R11), Z4
	VPBROADCASTD 40(R11), Z5
	NQUAD(64(R9), Z16, Z4, Z5, Z0, Z1)
	VPBROADCASTD 12(R11), Z6
	VPBROADCASTD 44(R11), Z7
	NQUAD(96(R9), Z17, Z6, Z7, Z2, Z3)
	VPBROADCASTD 16(R11), Z4
	VPBROADCASTD 48(R11), Z5
	NQUAD(128(R9), Z16, Z4, Z5, Z0, Z1)
	VPBROADCASTD 20(R11), Z6
	VPBROADCASTD 52(R11), Z7
	NQUAD(160(R9), Z17, Z6, Z7, Z2, Z3)
	VPBROADCASTD 24(R11), Z4
	VPBROADCASTD 56(R11), Z5
	NQUAD(192(R9), Z16, Z4, Z5, Z0, Z1)
	VPBROADCASTD 28(R11), Z6
	VPBROADCASTD 60(R11), Z7
	NQUAD(224(R9), Z17, Z6, Z7, Z2, Z3)
	VPADDD  Z2, Z0, Z0
	VPADDD  Z3, Z1, Z1
	GSUMS(3)
	GTERM(Z0, Z1, Z30, (R9), Z26, NIBFIX, 256)
	GNEXT(288, 64, 4)
	JNZ     g4block
	GEND
	JMP     g4group

g4done:
	VZEROUPPER
	RET

// Q8_0: the weights' bytes are made unsigned, u = w + 128 (VPXORD 0x80), for VPDPBUSD;
// per block of 32, isum_r = 256·hi + lo - 128·s = Σ w·q (each term below 2^29 in
// magnitude, the sum below 2^28) is scaled by float32(dw_r·da) and added to row r's sum.
// Z28 holds 0x80 bytes in the one-group loop, Z29 in the eight-group one.

// G8QUAD(K) adds quad K (64 bytes: four values of each row) times the activations into Z0
// (lo plane) and Z1 (hi plane).
#define G8QUAD(K) \
	VPXORD        (64*(K))(R9), Z28, Z16; \
	VPDPBUSD.BCST (4*(K))(R11), Z16, Z0; \
	VPDPBUSD.BCST (32+4*(K))(R11), Z16, Z1

// func dotQ8_0GroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ8_0GroupsAVX512(SB), NOSPLIT, $0-40
	GSETUP
	VPBROADCASTD gbytes80<>(SB), Z29
	IMUL3Q       $544, R8, AX
	CMPQ         CX, $8
	JB           g8one
	SPREAD(3)

g8eight:
	GROW(6)
	OCTSETUP

g8eightblock:
	OCTBLOCK(Q8OCTQUAD, Q8PF, NOFIX, 7, 512)
	ADDQ $544, R10
	ADDQ $544, BX
	GNEXT(544, 64, 4)
	JNZ  g8eightblock
	OCTEND
	CMPQ CX, $8
	JAE  g8eight
	SPREADEND(8)

g8one:
	TESTQ        CX, CX
	JZ           g8done
	VPBROADCASTD gbytes80<>(SB), Z28

g8group:
	GROW(6)

g8block:
	PREFETCH(4096)
	PREFETCH(4352)
	PREFETCHT0   4608(R9)
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	G8QUAD(0)
	G8QUAD(1)
	G8QUAD(2)
	G8QUAD(3)
	G8QUAD(4)
	G8QUAD(5)
	G8QUAD(6)
	G8QUAD(7)
	VPSLLD       $8, Z1, Z1
	VPADDD       Z1, Z0, Z0
	VPBROADCASTD (R13), Z2
	VPSLLD       $7, Z2, Z2
	VPSUBD       Z2, Z0, Z0
	VCVTDQ2PS    Z0, Z0
	VCVTPH2PS    512(R9), Z3
	VMULPS.BCST  (R12), Z3, Z3
	VMULPS       Z3, Z0, Z0
	VADDPS       Z0, Z30, Z30
	GNEXT(544, 64, 4)
	JNZ          g8block
	GEND
	JNZ          g8group

g8done:
	VZEROUPPER
	RET

// Q4_K, Q5_K: per sub-block j of 32 values, the planes' sums (Z0, Z1) are multiplied by
// the rows' scales sc_j (VPMULLD) into Z24 (lo) and Z25 (hi); all stay exact in int32
// (|lo|, |hi| < 8·63·31·128·32). isum = 256·hi + lo, which int32 cannot hold, is formed
// exactly in f64 and rounded once to f32, as the reference's float32(int64) is.
//
// The scales and mins are decoded once a super-block, byte-wise: the scale bytes are
// transposed (byte p of the 16 rows at SC+16p), so one 64-byte register holds bytes p..p+3
// of every row, and for the four sub-blocks j = L (or 4+L) of its 128-bit lanes L
//
//	sc_j = p_j & 63, m_j = p_{j+4} & 63                                   (j < 4)
//	sc_j = p_{j+4} & 15 | (p_{j-4} >> 2) & 48, m_j = p_{j+4} >> 4 | (p_j >> 2) & 48 (j ≥ 4)
//
// ((p >> 6) << 4 = (p >> 2) & 48; the 16-bit shifts VPSRLW carry a neighbour's bits only
// into bits that the masks clear). The scales go to the stack, 16 bytes a sub-block, for
// VPMOVZXBD. The mins term, msum = Σ_j m_j·A_j with A_j = g_2j + g_2j+1 the activations'
// sum over sub-block j, takes six VPDPBUSD a super-block instead of eight VPMULLD: |A_j| ≤
// 32·32639 < 2^20 splits exactly into signed bytes, A_j = a0_j + 256·a1_j + 65536·a2_j
// (a0 = int8(A), a1 = int8((A - a0)/256), a2 = (A - a0 - 256·a1)/65536, |a2| ≤ 17), made
// once a super-block for all the groups (K4DIGITS); VPERMB (k4mperm) turns the rows' mins
// m_0..m_3 (and m_4..m_7) into four bytes a row, and VPDPBUSD (u8 m ≤ 63 times the s8
// digits of A_0..A_3, broadcast) sums Σ_j m_j·a_d_j per digit d, combined by Horner's rule
// in int32, every partial sum within 8·63·(2^20 + 128) < 2^30 (|msum| < 2^29).
// Z28 holds 0x3f bytes, Z27 k4mperm, Z26 0x30 bytes, Z31 the f64 256.

// K4DIGITS(OFF) writes the digits of the super-block's A_j to OFF(SP) (K4SUMDIGITS).
#define K4DIGITS(OFF) K4SUMDIGITS((R13), OFF)

// K4MINS(SC, G, DIG, M, T, U, C0F) leaves msum of the group at G in M, the digits at
// DIG(SP), through T and U.
#define K4MINS(SC, G, DIG, M, T, U, C0F) \
	K4MINBYTES(SC, G, T, U, M, C0F); \
	VPXORD        M, M, M; \
	VPDPBUSD.BCST (DIG+16)(SP), T, M; \
	VPDPBUSD.BCST (DIG+20)(SP), U, M; \
	VPSLLD        $8, M, M; \
	VPDPBUSD.BCST (DIG+8)(SP), T, M; \
	VPDPBUSD.BCST (DIG+12)(SP), U, M; \
	VPSLLD        $8, M, M; \
	VPDPBUSD.BCST DIG(SP), T, M; \
	VPDPBUSD.BCST (DIG+4)(SP), U, M

// Q4KQUAD(K) adds quad K of a Q4_K block, its nibbles split as Q4_0's (NQUAD; Z29 the
// nibble mask), lanes 8-15 taking 16 times their values as in the lockstep loop below;
// Q5KQUAD(K) that of a Q5_K block, its fifth bits (a 64-bit mask at 2048+8K) adding 16 to
// the values they mark (Z21: 0x10 bytes; Z29 0x0f bytes).
#define Q4KQUAD(K) \
	VBROADCASTI64X4 (32*(K))(R9), Z16; \
	VPANDD          Z29, Z16, Z16; \
	VPDPBUSD.BCST   (4*(K))(R11), Z16, Z0; \
	VPDPBUSD.BCST   (256+4*(K))(R11), Z16, Z1

#define Q5KQUAD(K) Q5QUAD(K, 2048, 256)

// Q5QUAD(K, FIFTH, HI) adds quad K of a block whose fifth bits start at FIFTH (a 64-bit mask
// a quad) and whose activations' hi plane is HI bytes after the lo one.
#define Q5QUAD(K, FIFTH, HI) \
	VMOVDQU32     (32*(K))(R9), Y16; \
	VPSRLW        $4, Y16, Y17; \
	VINSERTI64X4  $1, Y17, Z16, Z16; \
	VPANDD        Z29, Z16, Z16; \
	KMOVQ         (FIFTH+8*(K))(R9), K1; \
	VPADDB        Z21, Z16, K1, Z16; \
	VPDPBUSD.BCST (4*(K))(R11), Z16, Z0; \
	VPDPBUSD.BCST (HI+4*(K))(R11), Z16, Z1

// K4QUADS(J, QUAD, BB) sums sub-block J's 8 quads into Z0 and Z1, prefetching an eighth
// of the block (BB bytes) four blocks ahead.
#define K4QUADS(J, QUAD, BB) \
	LINES6(4*(BB)+(BB)/8*(J)); \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	QUAD(8*(J)); \
	QUAD(8*(J)+1); \
	QUAD(8*(J)+2); \
	QUAD(8*(J)+3); \
	QUAD(8*(J)+4); \
	QUAD(8*(J)+5); \
	QUAD(8*(J)+6); \
	QUAD(8*(J)+7)

// K4SUB(J, QUAD, BB) sums sub-block J and scales its sums into Z24 and Z25.
#define K4SUB(J, QUAD, BB) \
	K4QUADS(J, QUAD, BB); \
	VPMOVZXBD (16*(J))(SP), Z2; \
	VPMULLD   Z2, Z0, Z0; \
	VPADDD    Z0, Z24, Z24; \
	VPMULLD   Z2, Z1, Z1; \
	VPADDD    Z1, Z25, Z25

// ISUMF64(HI, LO, ZH, ZL) leaves 256·HI + LO (int32 lanes, eight at a time) in Z5 (lanes
// 0-7) and Z6 (8-15) as exact f64; ZH and ZL name HI and LO as Z registers.
#define ISUMF64(HI, ZH, LO, ZL) \
	VCVTDQ2PD     HI, Z5; \
	VEXTRACTI64X4 $1, ZH, Y6; \
	VCVTDQ2PD     Y6, Z6; \
	VCVTDQ2PD     LO, Z7; \
	VEXTRACTI64X4 $1, ZL, Y8; \
	VCVTDQ2PD     Y8, Z8; \
	VMULPD        Z31, Z5, Z5; \
	VADDPD        Z7, Z5, Z5; \
	VMULPD        Z31, Z6, Z6; \
	VADDPD        Z8, Z6, Z6

// TOF32 rounds Z5 and Z6 (f64) once each into the 16 f32 lanes of Z5.
#define TOF32 \
	VCVTPD2PS    Z5, Y5; \
	VCVTPD2PS    Z6, Y6; \
	VINSERTF64X4 $1, Y6, Z5, Z5

// K4TERM(D): Z30 += float32(dd·isum) - float32(dm·msum), d and dmin of the 16 rows at
// D(R9) and D+32(R9), msum in Z23.
#define K4TERM(D) \
	ISUMF64(Y25, Z25, Y24, Z24); \
	TOF32; \
	VCVTDQ2PS   Z23, Z23; \
	VCVTPH2PS   D(R9), Z9; \
	VMULPS.BCST (R12), Z9, Z9; \
	VCVTPH2PS   (D+32)(R9), Z10; \
	VMULPS.BCST (R12), Z10, Z10; \
	VMULPS      Z9, Z5, Z5; \
	VMULPS      Z10, Z23, Z23; \
	VSUBPS      Z23, Z5, Z5; \
	VADDPS      Z5, Z30, Z30

#define KSETUP \
	GSETUP; \
	KCONST

#define KCONST \
	VPBROADCASTD gbytes0f<>(SB), Z29; \
	VPBROADCASTD gbytes3f<>(SB), Z28; \
	VMOVDQU32    k4mperm<>(SB), Z27; \
	VPBROADCASTD gbytes30<>(SB), Z26; \
	VPBROADCASTD gbytes10<>(SB), Z21; \
	VBROADCASTSD gf64x256<>(SB), Z31

#define KZERO \
	VPXORD Z23, Z23, Z23; \
	VPXORD Z24, Z24, Z24; \
	VPXORD Z25, Z25, Z25

// K4BLOCK(QUAD, SC, BB, C0F, FIX) is a Q4_K or Q5_K super-block's work, its scales at
// SC(R9), its bytes BB, C0F holding 0x0f bytes, FIX(R) NIBFIX for split nibbles; the
// scales at 0(SP), the digits at 128(SP).
#define K4BLOCK(QUAD, SC, BB, C0F, FIX) \
	K4DIGITS(128); \
	K4SCALES(SC, (R9), 0, Z3, C0F); \
	VPXORD Z24, Z24, Z24; \
	VPXORD Z25, Z25, Z25; \
	K4SUB(0, QUAD, BB); \
	K4SUB(1, QUAD, BB); \
	K4SUB(2, QUAD, BB); \
	K4SUB(3, QUAD, BB); \
	K4SUB(4, QUAD, BB); \
	K4SUB(5, QUAD, BB); \
	K4SUB(6, QUAD, BB); \
	K4SUB(7, QUAD, BB); \
	K4MINS(SC, (R9), 128, Z23, Z3, Z4, C0F); \
	FIX(Z24); \
	FIX(Z25); \
	K4TERM(SC+192)

// Q4_K: four groups go in lockstep while four are left (as Q4_0's eight, for the streams),
// their nibbles split as Q4_0's (NQUAD), so that the planes' sums of lanes 8-15 are 16
// times theirs until the super-block's end (|lo|, |hi| < 16·8·63·15·128·32 < 2^31). A
// quad's activations are broadcast once for the four groups (Z21 lo, Z22 hi), so a quad of
// a group costs one load, not three. Registers of the four: R9 group 0, R10 group 2, AX the
// bytes between them, R15 between their outputs (SPREAD); Z0-Z7 a sub-block's lo and hi
// sums of each group, Z23 its scales, Z8-Z11 the groups' scaled lo sums, Z12-Z15 the hi,
// Z16-Z19 the rows' sums, Z24 and Z30 a quad, Z29 the nibble mask, Z25 gnibshift, Z20
// 0x0f bytes; the rest as the one-group loop's. The stack holds the four groups' scales
// (128 bytes each) and, at 512, the digits.

// K4FPF(J, G) prefetches sub-block J's bytes of the next block of the group at G.
#define K4FPF(J, G) \
	PREFETCHT0 (2304+288*(J))G; \
	PREFETCHT0 (2368+288*(J))G; \
	PREFETCHT0 (2432+288*(J))G; \
	PREFETCHT0 (2496+288*(J))G; \
	PREFETCHT0 (2560+288*(J))G

// K4FQUAD(Q) adds quad Q of the four groups into Z0-Z7.
#define K4FQUAD(Q) \
	VPBROADCASTD (4*(Q))(R11), Z21; \
	VPBROADCASTD (256+4*(Q))(R11), Z22; \
	NQUAD((32*(Q))(R9), Z24, Z21, Z22, Z0, Z1); \
	NQUAD((32*(Q))(R9)(AX*1), Z30, Z21, Z22, Z2, Z3); \
	NQUAD((32*(Q))(R10), Z24, Z21, Z22, Z4, Z5); \
	NQUAD((32*(Q))(R10)(AX*1), Z30, Z21, Z22, Z6, Z7)

// K4FSCALE(J, SC, LO, HI, L, H) adds a group's sub-block J sums LO and HI times its scales
// at SC(SP) into L and H.
#define K4FSCALE(J, SC, LO, HI, L, H) \
	VPMOVZXBD (SC+16*(J))(SP), Z23; \
	VPMULLD   Z23, LO, LO; \
	VPADDD    LO, L, L; \
	VPMULLD   Z23, HI, HI; \
	VPADDD    HI, H, H

// K4FSTEP(J) is sub-block J of the four groups.
#define K4FSTEP(J) \
	K4FPF(J, (R9)); \
	K4FPF(J, (R9)(AX*1)); \
	K4FPF(J, (R10)); \
	K4FPF(J, (R10)(AX*1)); \
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7); \
	K4FQUAD(8*(J)); \
	K4FQUAD(8*(J)+1); \
	K4FQUAD(8*(J)+2); \
	K4FQUAD(8*(J)+3); \
	K4FQUAD(8*(J)+4); \
	K4FQUAD(8*(J)+5); \
	K4FQUAD(8*(J)+6); \
	K4FQUAD(8*(J)+7); \
	K4FSCALE(J, 0, Z0, Z1, Z8, Z12); \
	K4FSCALE(J, 128, Z2, Z3, Z9, Z13); \
	K4FSCALE(J, 256, Z4, Z5, Z10, Z14); \
	K4FSCALE(J, 384, Z6, Z7, Z11, Z15)

// K4FTERM(L, YL, H, YH, ACC, G): K4TERM for the group at G, through Z0-Z7 and Z21; YL and
// YH name L and H as Y registers.
#define K4FTERM(L, YL, H, YH, ACC, G) \
	K4MINS(2048, G, 512, Z6, Z7, Z21, Z20); \
	VPSRAVD       Z25, L, L; \
	VPSRAVD       Z25, H, H; \
	VCVTDQ2PD     YH, Z0; \
	VEXTRACTI64X4 $1, H, Y1; \
	VCVTDQ2PD     Y1, Z1; \
	VCVTDQ2PD     YL, Z2; \
	VEXTRACTI64X4 $1, L, Y3; \
	VCVTDQ2PD     Y3, Z3; \
	VMULPD        Z31, Z0, Z0; \
	VADDPD        Z2, Z0, Z0; \
	VMULPD        Z31, Z1, Z1; \
	VADDPD        Z3, Z1, Z1; \
	VCVTPD2PS     Z0, Y0; \
	VCVTPD2PS     Z1, Y1; \
	VINSERTF64X4  $1, Y1, Z0, Z0; \
	VCVTDQ2PS     Z6, Z6; \
	VCVTPH2PS     2240 G, Z4; \
	VMULPS.BCST   (R12), Z4, Z4; \
	VCVTPH2PS     2272 G, Z5; \
	VMULPS.BCST   (R12), Z5, Z5; \
	VMULPS        Z4, Z0, Z0; \
	VMULPS        Z5, Z6, Z6; \
	VSUBPS        Z6, Z0, Z0; \
	VADDPS        Z0, ACC, ACC

// func dotQ4_KGroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ4_KGroupsAVX512(SB), NOSPLIT, $544-40
	KSETUP
	VMOVDQA64 Z29, Z20
	VMOVDQU32 gnibmask<>(SB), Z29
	VMOVDQU32 gnibshift<>(SB), Z25
	IMUL3Q    $2304, R8, AX
	CMPQ      CX, $4
	JB        gk4one
	SPREAD(2)

gk4four:
	GROW(9)
	LEAQ   (SI)(AX*2), R10
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19

gk4fourblock:
	K4DIGITS(512)
	K4SCALES(2048, (R9), 0, Z21, Z20)
	K4SCALES(2048, (R9)(AX*1), 128, Z22, Z20)
	K4SCALES(2048, (R10), 256, Z23, Z20)
	K4SCALES(2048, (R10)(AX*1), 384, Z21, Z20)
	ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	K4FSTEP(0)
	K4FSTEP(1)
	K4FSTEP(2)
	K4FSTEP(3)
	K4FSTEP(4)
	K4FSTEP(5)
	K4FSTEP(6)
	K4FSTEP(7)
	K4FTERM(Z8, Y8, Z12, Y12, Z16, (R9))
	K4FTERM(Z9, Y9, Z13, Y13, Z17, (R9)(AX*1))
	K4FTERM(Z10, Y10, Z14, Y14, Z18, (R10))
	K4FTERM(Z11, Y11, Z15, Y15, Z19, (R10)(AX*1))
	ADDQ $2304, R10
	GNEXT(2304, 512, 64)
	JNZ  gk4fourblock
	VMOVUPS Z16, (DI)
	VMOVUPS Z17, (DI)(R15*1)
	VMOVUPS Z18, (DI)(R15*2)
	LEAQ    (DI)(R15*2), R10
	VMOVUPS Z19, (R10)(R15*1)
	ADDQ    $64, DI
	MOVQ    R9, SI
	SUBQ    $4, CX
	CMPQ    CX, $4
	JAE     gk4four
	SPREADEND(4)

gk4one:
	TESTQ CX, CX
	JZ    gk4done

gk4group:
	GROW(9)

gk4block:
	K4BLOCK(Q4KQUAD, 2048, 2304, Z20, NIBFIX)
	GNEXT(2304, 512, 64)
	JNZ gk4block
	GEND
	JNZ gk4group

gk4done:
	VZEROUPPER
	RET

// func dotQ5_KGroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ5_KGroupsAVX512(SB), NOSPLIT, $160-40
	KSETUP

gk5group:
	GROW(9)

gk5block:
	K4BLOCK(Q5KQUAD, 2560, 2816, Z29, NOFIX)
	GNEXT(2816, 512, 64)
	JNZ gk5block
	GEND
	JNZ gk5group
	VZEROUPPER
	RET

// Q6_K: per 16-value group s (4 quads), the planes' sums times the rows' int8 scales
// (VPMOVSXBD) into Z24 (lo) and Z25 (hi), and the scales times the activations' sum g_s
// into Z23: |lo|, |hi| < 16·128·63·128·16 and |Z23| < 16·128·16·32639, exact in int32.
// isum = 256·hi + lo - 32·Z23 is formed exactly in f64. A quad's high bits come as 16
// bytes, broadcast to the four 128-bit lanes; lane L keeps its values' bits at bits 2L and
// 2L+1 of each byte, which a rotation by 4-2L (mod 32, VPROLVD: Z22) brings to bits 4-5,
// where VPTERNLOGD ORs them (masked by 0x30 bytes, Z20) into the nibbles.

#define Q6QUAD(K) \
	Q6READY(K); \
	VPDPBUSD.BCST   (4*(K))(R11), Z16, Z0; \
	VPDPBUSD.BCST   (256+4*(K))(R11), Z16, Z1

// Q6GROUP(S) is group S's work, prefetching its share of the block three blocks ahead.
#define Q6GROUP(S) \
	PREFETCH(3*3360+210*(S)); \
	VPXORD       Z0, Z0, Z0; \
	VPXORD       Z1, Z1, Z1; \
	Q6QUAD(4*(S)); \
	Q6QUAD(4*(S)+1); \
	Q6QUAD(4*(S)+2); \
	Q6QUAD(4*(S)+3); \
	VPMOVSXBD    (3072+16*(S))(R9), Z2; \
	VPMULLD      Z2, Z0, Z0; \
	VPADDD       Z0, Z24, Z24; \
	VPMULLD      Z2, Z1, Z1; \
	VPADDD       Z1, Z25, Z25; \
	VPMULLD.BCST (4*(S))(R13), Z2, Z2; \
	VPADDD       Z2, Z23, Z23

// func dotQ6_KGroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ6_KGroupsAVX512(SB), NOSPLIT, $0-40
	GSETUP
	VMOVDQU32    q6Rot<>(SB), Z22
	VPBROADCASTD gbytes30<>(SB), Z20
	VBROADCASTSD gf64x256<>(SB), Z31
	VBROADCASTSD gf64x32<>(SB), Z19

gk6group:
	GROW(9)

gk6block:
	KZERO
	Q6GROUP(0)
	Q6GROUP(1)
	Q6GROUP(2)
	Q6GROUP(3)
	Q6GROUP(4)
	Q6GROUP(5)
	Q6GROUP(6)
	Q6GROUP(7)
	Q6GROUP(8)
	Q6GROUP(9)
	Q6GROUP(10)
	Q6GROUP(11)
	Q6GROUP(12)
	Q6GROUP(13)
	Q6GROUP(14)
	Q6GROUP(15)
	ISUMF64(Y25, Z25, Y24, Z24)
	VCVTDQ2PD     Y23, Z9
	VEXTRACTI64X4 $1, Z23, Y10
	VCVTDQ2PD     Y10, Z10
	VMULPD        Z19, Z9, Z9
	VSUBPD        Z9, Z5, Z5
	VMULPD        Z19, Z10, Z10
	VSUBPD        Z10, Z6, Z6
	TOF32
	VCVTPH2PS     3328(R9), Z9
	VMULPS.BCST   (R12), Z9, Z9
	VMULPS        Z9, Z5, Z5
	VADDPS        Z5, Z30, Z30
	GNEXT(3360, 512, 64)
	JNZ           gk6block
	GEND
	JNZ           gk6group
	VZEROUPPER
	RET

// Q5_0, Q5_1: per block of 32, Q4_0's nibbles with Q5_K's fifth bits (Q5QUAD; the values
// 0..31 are unsigned bytes for VPDPBUSD), isum = 256·hi + lo (exact: below 2^25), less 16·s
// for Q5_0, scaled by float32(dw·da); Q5_1 then adds float32(m·da)·float32(s). One group
// at a time. Z29 holds 0x0f bytes, Z21 0x10 bytes.

// Q5SUMS sums a Q5_0 or Q5_1 block of the group into Z0 (isum, before the offset), through
// Z1, Z16, Z17 and K1, prefetching four blocks ahead (BB bytes a block).
#define Q5SUMS(BB) \
	LINES6(4*(BB)); \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	Q5QUAD(0, 256, 32); \
	Q5QUAD(1, 256, 32); \
	Q5QUAD(2, 256, 32); \
	Q5QUAD(3, 256, 32); \
	Q5QUAD(4, 256, 32); \
	Q5QUAD(5, 256, 32); \
	Q5QUAD(6, 256, 32); \
	Q5QUAD(7, 256, 32); \
	VPSLLD $8, Z1, Z1; \
	VPADDD Z1, Z0, Z0

// func dotQ5_0GroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ5_0GroupsAVX512(SB), NOSPLIT, $0-40
	GSETUP
	VPBROADCASTD gbytes10<>(SB), Z21

g50group:
	GROW(6)

g50block:
	Q5SUMS(352)
	VPBROADCASTD (R13), Z2
	VPSLLD       $4, Z2, Z2
	VPSUBD       Z2, Z0, Z0
	VCVTDQ2PS    Z0, Z0
	VCVTPH2PS    320(R9), Z3
	VMULPS.BCST  (R12), Z3, Z3
	VMULPS       Z3, Z0, Z0
	VADDPS       Z0, Z30, Z30
	GNEXT(352, 64, 4)
	JNZ          g50block
	GEND
	JNZ          g50group
	VZEROUPPER
	RET

// func dotQ5_1GroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)
TEXT ·dotQ5_1GroupsAVX512(SB), NOSPLIT, $0-40
	GSETUP
	VPBROADCASTD gbytes10<>(SB), Z21

g51group:
	GROW(6)

g51block:
	Q5SUMS(384)
	VCVTDQ2PS    Z0, Z0
	VCVTPH2PS    320(R9), Z3
	VMULPS.BCST  (R12), Z3, Z3
	VMULPS       Z3, Z0, Z0
	VCVTPH2PS    352(R9), Z3
	VMULPS.BCST  (R12), Z3, Z3
	VPBROADCASTD (R13), Z2
	VCVTDQ2PS    Z2, Z2
	VMULPS       Z2, Z3, Z3
	VADDPS       Z3, Z0, Z0
	VADDPS       Z0, Z30, Z30
	GNEXT(384, 64, 4)
	JNZ          g51block
	GEND
	JNZ          g51group
	VZEROUPPER
	RET
