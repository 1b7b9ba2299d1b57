//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 kernels of Dot, for CPUs without AVX-512: the contract of dot_avx512_amd64.s,
//
//	func dot<T>AVX2(y *float32, w *byte, wstride, rows int, a *byte, n int)
//
// in 32-byte registers. The reference's 16 lanes are two registers here (lanes 0-7 and
// 8-15); products come from VPMADDWD (words) and VPMADDUBSW then VPMADDWD (bytes, the
// K-quants), added with VPADDD, all exact; the f32 operations are the reference's.
//
// Registers common to the kernels: DI y, SI the weight row, CX rows left, DX a, R8 n; per
// row R9 the weights, R10 their scales, R11 the activations' values, R12 their scales;
// BX points at the frame, where per-chunk scales go.

DATA a2bytes0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL a2bytes0f<>(SB), RODATA|NOPTR, $4
DATA a2bytes01<>+0(SB)/4, $0x01010101
GLOBL a2bytes01<>(SB), RODATA|NOPTR, $4
DATA a2bytes03<>+0(SB)/4, $0x03030303
GLOBL a2bytes03<>(SB), RODATA|NOPTR, $4

// COMBINE2(LO, HI, OUT): OUT = combine16 of the lanes LO (0-7) and HI (8-15): lanes l and
// l+8, then ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)). Clobbers Y0, X1.
#define COMBINE2(LO, HI, OUT) \
	VADDPS       HI, LO, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1; \
	VADDSS       X1, X0, X0; \
	VMOVSS       X0, OUT

// The 32-value types: a pair of blocks (pairLayout) is four runs of 16 values, each
// widened to 16 words: A 0-15 in Y3, A 16-31 in Y4, B 0-15 in Y5, B 16-31 in Y6. Block
// A's quads are VPMADDWD(Y3, acts 0..) + VPMADDWD(Y4, acts 64..), B's likewise with acts
// 32.. and 96..; each block's are scaled and added to the accumulator of its parity (Y8:
// lanes 0-7, even blocks; Y9: lanes 8-15, odd blocks).

// PAIR2(AOFF, SA, SB) finishes a pair with activations at AOFF(R11) and scales at SA and
// SB (memory operands broadcast).
#define PAIR2(AOFF, SA, SB) \
	VPMADDWD     AOFF(R11), Y3, Y3; \
	VPMADDWD     (AOFF+64)(R11), Y4, Y4; \
	VPADDD       Y4, Y3, Y3; \
	VPMADDWD     (AOFF+32)(R11), Y5, Y5; \
	VPMADDWD     (AOFF+96)(R11), Y6, Y6; \
	VPADDD       Y6, Y5, Y5; \
	VCVTDQ2PS    Y3, Y3; \
	VBROADCASTSS SA, Y7; \
	VMULPS       Y7, Y3, Y3; \
	VADDPS       Y3, Y8, Y8; \
	VCVTDQ2PS    Y5, Y5; \
	VBROADCASTSS SB, Y7; \
	VMULPS       Y7, Y5, Y5; \
	VADDPS       Y5, Y9, Y9

// LONE2(AOFF, S): the same for a last block without a partner (values in Y3, Y4; its
// activations in order at AOFF(R11)); its index is even.
#define LONE2(AOFF, S) \
	VPMADDWD     AOFF(R11), Y3, Y3; \
	VPMADDWD     (AOFF+32)(R11), Y4, Y4; \
	VPADDD       Y4, Y3, Y3; \
	VCVTDQ2PS    Y3, Y3; \
	VBROADCASTSS S, Y7; \
	VMULPS       Y7, Y3, Y3; \
	VADDPS       Y3, Y8, Y8

// Q8_0WORDS2(WOFF): the pair at WOFF(R9) (A 0-15, B 0-15, A 16-31, B 16-31).
#define Q8_0WORDS2(WOFF) \
	VPMOVSXBW WOFF(R9), Y3; \
	VPMOVSXBW (WOFF+32)(R9), Y4; \
	VPMOVSXBW (WOFF+16)(R9), Y5; \
	VPMOVSXBW (WOFF+48)(R9), Y6

#define Q8_0LONE2 \
	VPMOVSXBW (R9), Y3; \
	VPMOVSXBW 16(R9), Y4

// SCALES8 stores the scales float32(dw·da) of 8 blocks (dw at (R10), da at (R12)) at (BX).
#define SCALES8 \
	VCVTPH2PS (R10), Y2; \
	VMULPS    (R12), Y2, Y2; \
	VMOVUPS   Y2, (BX)

// SCALE1(OFF) stores the scale of one block (dw at (R10), da at (R12)) at OFF(BX).
#define SCALE1(OFF) \
	MOVWLZX   (R10), AX; \
	VMOVD     AX, X2; \
	VCVTPH2PS X2, X2; \
	VMULSS    (R12), X2, X2; \
	VMOVSS    X2, OFF(BX)

// KERNEL32_2(WORDS, LONE, QS): the kernel of a 32-value type of QS bytes of values per
// block. R13 counts chunks of 8 blocks, then the pairs past them.
#define KERNEL32_2(WORDS, LONE, QS) \
	MOVQ y+0(FP), DI; \
	MOVQ w+8(FP), SI; \
	MOVQ rows+24(FP), CX; \
	MOVQ a+32(FP), DX; \
	MOVQ n+40(FP), R8; \
	LEAQ scales-32(SP), BX; \
row: \
	MOVQ   SI, R9; \
	IMUL3Q $QS, R8, R10; \
	ADDQ   SI, R10; \
	MOVQ   DX, R11; \
	MOVQ   R8, R12; \
	SHLQ   $6, R12; \
	ADDQ   DX, R12; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	MOVQ   R8, R13; \
	SHRQ   $3, R13; \
	JZ     tail; \
chunk: \
	SCALES8; \
	WORDS(0); PAIR2(0, 0(BX), 4(BX)); \
	WORDS(2*QS); PAIR2(128, 8(BX), 12(BX)); \
	WORDS(4*QS); PAIR2(256, 16(BX), 20(BX)); \
	WORDS(6*QS); PAIR2(384, 24(BX), 28(BX)); \
	ADDQ $(8*QS), R9; \
	ADDQ $512, R11; \
	ADDQ $16, R10; \
	ADDQ $32, R12; \
	DECQ R13; \
	JNZ  chunk; \
tail: \
	MOVQ R8, R13; \
	ANDQ $7, R13; \
	SHRQ $1, R13; \
	JZ   lone; \
pair: \
	SCALE1(0); \
	ADDQ $2, R10; \
	ADDQ $4, R12; \
	SCALE1(4); \
	ADDQ $2, R10; \
	ADDQ $4, R12; \
	WORDS(0); PAIR2(0, 0(BX), 4(BX)); \
	ADDQ $(2*QS), R9; \
	ADDQ $128, R11; \
	DECQ R13; \
	JNZ  pair; \
lone: \
	TESTQ $1, R8; \
	JZ    done; \
	SCALE1(0); \
	LONE; \
	LONE2(0, 0(BX)); \
done: \
	COMBINE2(Y8, Y9, (DI)); \
	ADDQ $4, DI; \
	ADDQ wstride+16(FP), SI; \
	DECQ CX; \
	JNZ  row; \
	VZEROUPPER; \
	RET

// func dotQ8_0AVX2(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $32-48
	KERNEL32_2(Q8_0WORDS2, Q8_0LONE2, 32)

// Grouped Q4_0: as dotQ4_0GroupsAVX512, each quad's 32 bytes split into the low nibbles
// (rows 0-7) and high ones (8-15), VPMADDUBSW with the broadcast activations and VPMADDWD
// with ones summing each row's four products; Y8/Y9 (lo/hi plane) gather rows 0-7, Y10/Y11
// rows 8-15, Y14/Y15 their sums.
//
//	func dotQ4_0GroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)

// G4HALF2(V, AL, AH, ACCL, ACCH): the quad's bytes of 8 rows in V with the broadcast
// activations AL, AH (Y12: 16-bit ones).
#define G4HALF2(V, AL, AH, ACCL, ACCH) \
	VPMADDUBSW AL, V, Y4; \
	VPMADDWD   Y12, Y4, Y4; \
	VPADDD     Y4, ACCL, ACCL; \
	VPMADDUBSW AH, V, Y5; \
	VPMADDWD   Y12, Y5, Y5; \
	VPADDD     Y5, ACCH, ACCH

#define G4QUAD2(Q) \
	VMOVDQU      (32*(Q))(R9), Y0; \
	VPAND        Y13, Y0, Y1; \
	VPSRLW       $4, Y0, Y0; \
	VPAND        Y13, Y0, Y0; \
	VPBROADCASTD (4*(Q))(R11), Y2; \
	VPBROADCASTD (32+4*(Q))(R11), Y3; \
	G4HALF2(Y1, Y2, Y3, Y8, Y9); \
	G4HALF2(Y0, Y2, Y3, Y10, Y11)

// G4FINISH2(ACCL, ACCH, DW, SUM): isum = 256·hi + lo - 8·s of 8 rows, scaled by their
// scales (f16 at DW) times da and added to SUM (Y6: 8·s broadcast, Y7: da broadcast).
#define G4FINISH2(ACCL, ACCH, DW, SUM) \
	VPSLLD    $8, ACCH, ACCH; \
	VPADDD    ACCH, ACCL, ACCL; \
	VPSUBD    Y6, ACCL, ACCL; \
	VCVTDQ2PS ACCL, ACCL; \
	VCVTPH2PS DW, Y4; \
	VMULPS    Y7, Y4, Y4; \
	VMULPS    Y4, ACCL, ACCL; \
	VADDPS    ACCL, SUM, SUM

TEXT ·dotQ4_0GroupsAVX2(SB), NOSPLIT, $0-40
	MOVQ         y+0(FP), DI
	MOVQ         w+8(FP), SI
	MOVQ         groups+16(FP), CX
	MOVQ         a+24(FP), DX
	MOVQ         n+32(FP), R8
	VPBROADCASTD a2bytes0f<>(SB), Y13
	VPBROADCASTD a2words0001<>(SB), Y12

g4group2:
	MOVQ   SI, R9
	MOVQ   DX, R11
	MOVQ   R8, R12
	SHLQ   $6, R12
	ADDQ   DX, R12
	LEAQ   (R12)(R8*4), R13
	MOVQ   R8, R14
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15

g4block2:
	PREFETCHT0   2048(R9)
	PREFETCHT0   2112(R9)
	PREFETCHT0   2176(R9)
	PREFETCHT0   2240(R9)
	PREFETCHT0   2304(R9)
	VPXOR        Y8, Y8, Y8
	VPXOR        Y9, Y9, Y9
	VPXOR        Y10, Y10, Y10
	VPXOR        Y11, Y11, Y11
	G4QUAD2(0)
	G4QUAD2(1)
	G4QUAD2(2)
	G4QUAD2(3)
	G4QUAD2(4)
	G4QUAD2(5)
	G4QUAD2(6)
	G4QUAD2(7)
	VPBROADCASTD (R13), Y6
	VPSLLD       $3, Y6, Y6
	VBROADCASTSS (R12), Y7
	G4FINISH2(Y8, Y9, 256(R9), Y14)
	G4FINISH2(Y10, Y11, 272(R9), Y15)
	ADDQ         $288, R9
	ADDQ         $64, R11
	ADDQ         $4, R12
	ADDQ         $4, R13
	DECQ         R14
	JNZ          g4block2
	VMOVUPS      Y14, (DI)
	VMOVUPS      Y15, 32(DI)
	ADDQ         $64, DI
	MOVQ         R9, SI
	DECQ         CX
	JNZ          g4group2
	VZEROUPPER
	RET

DATA a2words0001<>+0(SB)/4, $0x00010001
GLOBL a2words0001<>(SB), RODATA|NOPTR, $4

// The K-quants: per super-block, the weights of 32 values at a time (bytes) meet both
// byte planes of the activations in VPMADDUBSW; VPMADDWD with the sub-block's scale (a
// broadcast word) sums the pairs into int32 lanes: lane l of the values 0-31 of a 64 is
// the reference's lane l, of 32-63 its lane 8+l. Y8/Y9 hold the lo/hi planes' lanes 0-7,
// Y10/Y11 lanes 8-15; Y14 and Y15 the row's f32 sums (lanes 0-7, 8-15). The frame holds
// the super-block's scales as words at 0(BX) and its mins at 16(BX).


// DUPLO<>, DUPHI<>: VPERMD indices 0,0,1,1,2,2,3,3 and 4,4,5,5,6,6,7,7 (each lane's
// min: m_{l/2}).
DATA dupLo<>+0(SB)/8, $0x0000000000000000
DATA dupLo<>+8(SB)/8, $0x0000000100000001
DATA dupLo<>+16(SB)/8, $0x0000000200000002
DATA dupLo<>+24(SB)/8, $0x0000000300000003
GLOBL dupLo<>(SB), RODATA|NOPTR, $32
DATA dupHi<>+0(SB)/8, $0x0000000400000004
DATA dupHi<>+8(SB)/8, $0x0000000500000005
DATA dupHi<>+16(SB)/8, $0x0000000600000006
DATA dupHi<>+24(SB)/8, $0x0000000700000007
GLOBL dupHi<>(SB), RODATA|NOPTR, $32

// SCALESK4_2 decodes the 12 scale bytes at 4(R9) of a Q4_K/Q5_K super-block into the
// frame as 16 words: the 8 scales at 0(BX), the 8 mins at 16(BX) (see SCALESK4 of the
// AVX-512 kernels). Clobbers X2-X5.
#define SCALESK4_2 \
	VMOVDQU    4(R9), X2; \
	VPAND      a2b3f<>(SB), X2, X3; \
	VPSRLW     $6, X2, X4; \
	VPAND      a2b03<>(SB), X4, X4; \
	VPSLLW     $4, X4, X4; \
	VPSHUFD    $0xaa, X2, X5; \
	VPSRLVD    a2cShift<>(SB), X5, X5; \
	VPAND      a2b0f<>(SB), X5, X5; \
	VPOR       X4, X5, X5; \
	VPUNPCKLDQ X5, X3, X3; \
	VPMOVZXBW  X3, Y3; \
	VMOVDQU    Y3, (BX)

DATA a2b3f<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA a2b3f<>+8(SB)/8, $0x3f3f3f3f3f3f3f3f
GLOBL a2b3f<>(SB), RODATA|NOPTR, $16
DATA a2b03<>+0(SB)/8, $0x0303030303030303
DATA a2b03<>+8(SB)/8, $0x0303030303030303
DATA a2b03<>+16(SB)/8, $0x0303030303030303
DATA a2b03<>+24(SB)/8, $0x0303030303030303
GLOBL a2b03<>(SB), RODATA|NOPTR, $32
DATA a2b0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA a2b0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL a2b0f<>(SB), RODATA|NOPTR, $16
DATA a2cShift<>+0(SB)/8, $0x0000000400000000
DATA a2cShift<>+8(SB)/8, $0
GLOBL a2cShift<>(SB), RODATA|NOPTR, $16

// SUB2(V, J, AOFF, ACCL, ACCH): the 32 values of sub-block J (bytes in V) against the
// activations AOFF.. of both planes, scaled by the word at 2J(BX).
#define SUB2(V, J, AOFF, ACCL, ACCH) \
	VPMADDUBSW   AOFF(R11), V, Y4; \
	VPMADDUBSW   (256+AOFF)(R11), V, Y5; \
	VPBROADCASTW (2*(J))(BX), Y6; \
	VPMADDWD     Y6, Y4, Y4; \
	VPMADDWD     Y6, Y5, Y5; \
	VPADDD       Y4, ACCL, ACCL; \
	VPADDD       Y5, ACCH, ACCH

// K4CHUNK2(C, OFF): chunk C's 32 bytes at OFF(R9): low nibbles sub-block 2C (lanes 0-7),
// high nibbles 2C+1 (lanes 8-15). Y13: 0x0f bytes.
#define K4CHUNK2(C, OFF) \
	VMOVDQU OFF(R9), Y0; \
	VPAND   Y13, Y0, Y1; \
	VPSRLW  $4, Y0, Y0; \
	VPAND   Y13, Y0, Y0; \
	FIFTH2(C); \
	SUB2(Y1, 2*(C), 64*(C), Y8, Y9); \
	SUB2(Y0, 2*(C)+1, 64*(C)+32, Y10, Y11)

// SBTERM2(DD, DM, M0, M1): adds the super-block's lanes, scaled by DD, less the mins'
// lanes M0 (0-7) and M1 (8-15) (int32, clobbered) scaled by DM, to Y14 and Y15.
#define SBTERM2(DD, DM, M0, M1) \
	VPSLLD    $8, Y9, Y9; \
	VPADDD    Y9, Y8, Y8; \
	VCVTDQ2PS Y8, Y8; \
	VMULPS    DD, Y8, Y8; \
	VCVTDQ2PS M0, M0; \
	VMULPS    DM, M0, M0; \
	VSUBPS    M0, Y8, Y8; \
	VADDPS    Y8, Y14, Y14; \
	VPSLLD    $8, Y11, Y11; \
	VPADDD    Y11, Y10, Y10; \
	VCVTDQ2PS Y10, Y10; \
	VMULPS    DD, Y10, Y10; \
	VCVTDQ2PS M1, M1; \
	VMULPS    DM, M1, M1; \
	VSUBPS    M1, Y10, Y10; \
	VADDPS    Y10, Y15, Y15

// K4TERM2: dd = float32(da·d), dm = float32(da·dmin) (d, dmin at 0(R9), da at (R12)); the
// mins' lanes m_{l/2}·g_l (mins at 16(BX), g at (R13)).
#define K4TERM2 \
	VMOVD        0(R9), X6; \
	VCVTPH2PS    X6, X6; \
	VBROADCASTSS (R12), X7; \
	VMULPS       X7, X6, X6; \
	VMOVSHDUP    X6, X7; \
	VBROADCASTSS X6, Y6; \
	VBROADCASTSS X7, Y7; \
	VPMOVZXWD    16(BX), Y2; \
	VPERMD       Y2, Y12, Y3; \
	VPMULLD      (R13), Y3, Y3; \
	VMOVDQU      dupHi<>(SB), Y4; \
	VPERMD       Y2, Y4, Y2; \
	VPMULLD      32(R13), Y2, Y2; \
	SBTERM2(Y6, Y7, Y3, Y2)

#define KZERO2 \
	VPXOR Y8, Y8, Y8; \
	VPXOR Y9, Y9, Y9; \
	VPXOR Y10, Y10, Y10; \
	VPXOR Y11, Y11, Y11

// KERNELK2(SBWORK, BB): a K-quant kernel whose super-block's work is SBWORK, BB bytes a
// block. The frame's 32 bytes hold the scales; R13 points at the activations' sums and R14
// counts super-blocks.
#define KERNELK2(SBWORK, BB) \
	MOVQ         y+0(FP), DI; \
	MOVQ         w+8(FP), SI; \
	MOVQ         rows+24(FP), CX; \
	MOVQ         a+32(FP), DX; \
	MOVQ         n+40(FP), R8; \
	LEAQ         frame-32(SP), BX; \
	VPBROADCASTD a2bytes0f<>(SB), Y13; \
	VMOVDQU      dupLo<>(SB), Y12; \
krow: \
	MOVQ   SI, R9; \
	MOVQ   DX, R11; \
	MOVQ   R8, R12; \
	SHLQ   $9, R12; \
	ADDQ   DX, R12; \
	LEAQ   (R12)(R8*4), R13; \
	VXORPS Y14, Y14, Y14; \
	VXORPS Y15, Y15, Y15; \
	MOVQ   R8, R14; \
ksb: \
	SBWORK; \
	ADDQ $BB, R9; \
	ADDQ $512, R11; \
	ADDQ $4, R12; \
	ADDQ $64, R13; \
	DECQ R14; \
	JNZ  ksb; \
	COMBINE2(Y14, Y15, (DI)); \
	ADDQ $4, DI; \
	ADDQ wstride+16(FP), SI; \
	DECQ CX; \
	JNZ  krow; \
	VZEROUPPER; \
	RET

#define Q4KWORK \
	SCALESK4_2; \
	KZERO2; \
	K4CHUNK2(0, 16); \
	K4CHUNK2(1, 48); \
	K4CHUNK2(2, 80); \
	K4CHUNK2(3, 112); \
	K4TERM2

#define FIFTH2(C)

// func dotQ4_KAVX2(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ4_KAVX2(SB), NOSPLIT, $32-48
	KERNELK2(Q4KWORK, 144)

#undef FIFTH2

// FIFTH2(C): Q5_K's fifth bits of chunk C (bits 2C and 2C+1 of qh at 16(R9)) ORed into
// the low (Y1) and high (Y0) values.
#define FIFTH2(C) \
	VMOVDQU 16(R9), Y2; \
	VPSRLW  $(2*(C)), Y2, Y3; \
	VPAND   a2b01<>(SB), Y3, Y3; \
	VPSLLW  $4, Y3, Y3; \
	VPOR    Y3, Y1, Y1; \
	VPSRLW  $(2*(C)+1), Y2, Y3; \
	VPAND   a2b01<>(SB), Y3, Y3; \
	VPSLLW  $4, Y3, Y3; \
	VPOR    Y3, Y0, Y0

DATA a2b01<>+0(SB)/8, $0x0101010101010101
DATA a2b01<>+8(SB)/8, $0x0101010101010101
DATA a2b01<>+16(SB)/8, $0x0101010101010101
DATA a2b01<>+24(SB)/8, $0x0101010101010101
GLOBL a2b01<>(SB), RODATA|NOPTR, $32

#define Q5KWORK \
	SCALESK4_2; \
	KZERO2; \
	K4CHUNK2(0, 48); \
	K4CHUNK2(1, 80); \
	K4CHUNK2(2, 112); \
	K4CHUNK2(3, 144); \
	K4TERM2

// func dotQ5_KAVX2(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ5_KAVX2(SB), NOSPLIT, $32-48
	KERNELK2(Q5KWORK, 176)

// Q6_K: values u (0..63) = low 4 bits from ql, high 2 from qh; a 32-value run k of half H
// (values 128H+32k..) holds 16-value groups 8H+2k and 8H+2k+1, scaled by the words at
// 2g(BX); the lanes' corrections are 32·sc_l·g_l.

// Q6RUN(V, H, K): run K of half H (bytes in V) against the activations, into the lanes of
// its parity.
#define Q6RUN(V, H, K, ACCL, ACCH) \
	VPMADDUBSW   (128*(H)+32*(K))(R11), V, Y4; \
	VPMADDUBSW   (256+128*(H)+32*(K))(R11), V, Y5; \
	VPBROADCASTW (2*(8*(H)+2*(K)))(BX), X6; \
	VPBROADCASTW (2*(8*(H)+2*(K))+2)(BX), X7; \
	VINSERTI128  $1, X7, Y6, Y6; \
	VPMADDWD     Y6, Y4, Y4; \
	VPMADDWD     Y6, Y5, Y5; \
	VPADDD       Y4, ACCL, ACCL; \
	VPADDD       Y5, ACCH, ACCH

// Q6BITS(SHIFT, V): ORs bits SHIFT, SHIFT+1 of qh (Y2) into bits 4-5 of the values in V.
#define Q6BITS(SHIFT, V) \
	VPSRLW $SHIFT, Y2, Y3; \
	VPAND  a2b03<>(SB), Y3, Y3; \
	VPSLLW $4, Y3, Y3; \
	VPOR   Y3, V, V

// Q6VALUES(SRC, HIGH, SHIFT): the run's values into Y12: SRC's low nibbles (HIGH = 0) or
// high ones (HIGH = 4), with bits SHIFT, SHIFT+1 of qh.
#define Q6VALUES(SRC, HIGH, SHIFT) \
	VPSRLW $HIGH, SRC, Y12; \
	VPAND  Y13, Y12, Y12; \
	Q6BITS(SHIFT, Y12)

// Q6HALF2(H): ql at 64H(R9) (Y0: bytes 0-31, Y1: 32-63) and qh at 128+32H(R9) (Y2) give the
// half's four runs.
#define Q6HALF2(H) \
	VMOVDQU (64*(H))(R9), Y0; \
	VMOVDQU (64*(H)+32)(R9), Y1; \
	VMOVDQU (128+32*(H))(R9), Y2; \
	Q6VALUES(Y0, 0, 0); \
	Q6RUN(Y12, H, 0, Y8, Y9); \
	Q6VALUES(Y1, 0, 2); \
	Q6RUN(Y12, H, 1, Y10, Y11); \
	Q6VALUES(Y0, 4, 4); \
	Q6RUN(Y12, H, 2, Y8, Y9); \
	Q6VALUES(Y1, 4, 6); \
	Q6RUN(Y12, H, 3, Y10, Y11)

#define Q6KWORK \
	VPMOVSXBW    192(R9), Y3; \
	VMOVDQU      Y3, (BX); \
	KZERO2; \
	Q6HALF2(0); \
	Q6HALF2(1); \
	VPINSRW      $0, 208(R9), X6, X6; \
	VCVTPH2PS    X6, X6; \
	VMULSS       (R12), X6, X6; \
	VBROADCASTSS X6, Y6; \
	VPMOVSXWD    (BX), Y3; \
	VPMULLD      (R13), Y3, Y3; \
	VPSLLD       $5, Y3, Y3; \
	VPMOVSXWD    16(BX), Y2; \
	VPMULLD      32(R13), Y2, Y2; \
	VPSLLD       $5, Y2, Y2; \
	SBTERM2(Y6, Y6, Y3, Y2)

// func dotQ6_KAVX2(y *float32, w *byte, wstride, rows int, a *byte, n int)
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $32-48
	KERNELK2(Q6KWORK, 210)
