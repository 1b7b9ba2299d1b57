//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 kernels of QuantizeActs for one whole row, for CPUs without AVX-512: the contract
// of act_avx512_amd64.s,
//
//	func quantActs256AVX2(dst *byte, x *float32, nb int)
//	func quantActs32AVX2(dst *byte, x *float32, nb int)
//
// in 32-byte registers: a block's maximum |x| and the flag of a non-finite value (|x|'s
// bits above 0x7f7fffff, compared as signed dwords) are folded over its registers, then
// its values are scaled, rounded (VCVTPS2DQ, half to even) and narrowed with signed
// saturation (the values are within range, so it never saturates).

DATA q2absMask<>+0(SB)/4, $0x7fffffff
GLOBL q2absMask<>(SB), RODATA|NOPTR, $4
DATA q2maxFinite<>+0(SB)/4, $0x7f7fffff
GLOBL q2maxFinite<>(SB), RODATA|NOPTR, $4
DATA q2limit<>+0(SB)/4, $32639.0
GLOBL q2limit<>(SB), RODATA|NOPTR, $4
DATA q2nan<>+0(SB)/4, $0x7fc00000
GLOBL q2nan<>(SB), RODATA|NOPTR, $4

// ABSMAX2(OFF): folds |x| of the 8 values at OFF(SI) into Y14 (max) and Y13 (flags of
// non-finite values). Y15: the abs mask, Y12: the largest finite bits.
#define ABSMAX2(OFF) \
	VANDPS   OFF(SI), Y15, Y11; \
	VPCMPGTD Y12, Y11, Y10; \
	VPOR     Y10, Y13, Y13; \
	VMAXPS   Y11, Y14, Y14

// SCALE2(LIMIT): reduces Y14 to amax, stores d = amax/LIMIT at (R9) (NaN if Y13 flagged a
// value) and leaves id = LIMIT/amax (0 for amax = 0 or a flagged block) broadcast in Y9,
// and the same 0/-1 condition in Y8 (all ones: the block quantizes). Clobbers X10, X11,
// AX, BX, CX, DX, R11.
#define SCALE2(LIMIT) \
	VEXTRACTF128 $1, Y14, X10; \
	VMAXPS       X10, X14, X14; \
	VMOVHLPS     X14, X14, X10; \
	VMAXPS       X10, X14, X14; \
	VMOVSHDUP    X14, X10; \
	VMAXSS       X10, X14, X14; \
	VMOVSS       LIMIT, X11; \
	VDIVSS       X11, X14, X10; \
	VMOVD        X10, DX; \
	VDIVSS       X14, X11, X11; \
	VMOVD        X14, R11; \
	VPTEST       Y13, Y13; \
	MOVL         q2nan<>(SB), BX; \
	CMOVLNE      BX, DX; \
	MOVL         DX, (R9); \
	SETEQ        CX; \
	TESTL        R11, R11; \
	SETNE        BX; \
	ANDL         BX, CX; \
	MOVBLZX      CL, CX; \
	NEGL         CX; \
	VMOVD        CX, X8; \
	VPBROADCASTD X8, Y8; \
	VANDPS       X8, X11, X11; \
	VBROADCASTSS X11, Y9

// QUANT8(OFF, Y): the 8 values at OFF(SI) as int32 q in Y (zeros for a block Y8 rules
// out).
#define QUANT8(OFF, Y) \
	VMULPS    OFF(SI), Y9, Y; \
	VCVTPS2DQ Y, Y; \
	VPAND     Y8, Y, Y

#define BLOCKBEGIN \
	VXORPS Y14, Y14, Y14; \
	VPXOR  Y13, Y13, Y13

#define CONSTS2 \
	VPBROADCASTD q2absMask<>(SB), Y15; \
	VPBROADCASTD q2maxFinite<>(SB), Y12

// QRUN16(XOFF, OFF, HI): 16 values at XOFF(SI) (within a block being quantized): their low
// bytes at OFF(DI), high bytes at HI+OFF(DI), their sum in X0.
#define QRUN16(XOFF, OFF, HI) \
	QUANT8(XOFF, Y0); \
	QUANT8(XOFF+32, Y1); \
	VPSLLD     $24, Y0, Y2; \
	VPSRAD     $24, Y2, Y2; \
	VPSLLD     $24, Y1, Y3; \
	VPSRAD     $24, Y3, Y3; \
	VPSUBD     Y2, Y0, Y4; \
	VPSRAD     $8, Y4, Y4; \
	VPSUBD     Y3, Y1, Y5; \
	VPSRAD     $8, Y5, Y5; \
	VPACKSSDW  Y3, Y2, Y2; \
	VPERMQ     $0xd8, Y2, Y2; \
	VEXTRACTI128 $1, Y2, X3; \
	VPACKSSWB  X3, X2, X2; \
	VMOVDQU    X2, OFF(DI); \
	VPACKSSDW  Y5, Y4, Y4; \
	VPERMQ     $0xd8, Y4, Y4; \
	VEXTRACTI128 $1, Y4, X5; \
	VPACKSSWB  X5, X4, X4; \
	VMOVDQU    X4, (HI+OFF)(DI); \
	VPADDD     Y1, Y0, Y0; \
	VEXTRACTI128 $1, Y0, X1; \
	VPADDD     X1, X0, X0; \
	VPSHUFD    $0x4e, X0, X1; \
	VPADDD     X1, X0, X0; \
	VPSHUFD    $0xb1, X0, X1; \
	VPADDD     X1, X0, X0

// QSUM16(XOFF, OFF): QRUN16 within a 256-block, its sum stored at (R10).
#define QSUM16(XOFF, OFF) \
	QRUN16(XOFF, OFF, 256); \
	VMOVD X0, (R10); \
	ADDQ  $4, R10

// QSETUP2(PLANESHIFT) is the AVX-512 file's QSETUP in 32-byte registers (CONSTS2).
#define QSETUP2(PLANESHIFT) \
	MOVQ dst+0(FP), DI; \
	MOVQ x+8(FP), SI; \
	MOVQ nb+16(FP), R8; \
	MOVQ R8, R9; \
	SHLQ $PLANESHIFT, R9; \
	ADDQ DI, R9; \
	LEAQ (R9)(R8*4), R10; \
	CONSTS2

// func quantActs256AVX2(dst *byte, x *float32, nb int)
TEXT ·quantActs256AVX2(SB), NOSPLIT, $0-24
	QSETUP2(9)

block2:
	BLOCKBEGIN
	MOVQ $0, R13

absloop2:
	ABSMAX2(0)
	ABSMAX2(32)
	ABSMAX2(64)
	ABSMAX2(96)
	ADDQ $128, SI
	ADDQ $1, R13
	CMPQ R13, $8
	JB   absloop2
	SUBQ $1024, SI
	SCALE2(q2limit<>(SB))
	QSUM16(0, 0)
	QSUM16(64, 16)
	QSUM16(128, 32)
	QSUM16(192, 48)
	QSUM16(256, 64)
	QSUM16(320, 80)
	QSUM16(384, 96)
	QSUM16(448, 112)
	QSUM16(512, 128)
	QSUM16(576, 144)
	QSUM16(640, 160)
	QSUM16(704, 176)
	QSUM16(768, 192)
	QSUM16(832, 208)
	QSUM16(896, 224)
	QSUM16(960, 240)
	ADDQ $1024, SI
	ADDQ $512, DI
	ADDQ $4, R9
	DECQ R8
	JNZ  block2
	VZEROUPPER
	RET

// func quantActs32AVX2(dst *byte, x *float32, nb int)
TEXT ·quantActs32AVX2(SB), NOSPLIT, $0-24
	QSETUP2(6)

block32:
	BLOCKBEGIN
	ABSMAX2(0)
	ABSMAX2(32)
	ABSMAX2(64)
	ABSMAX2(96)
	SCALE2(q2limit<>(SB))
	QRUN16(0, 0, 32)
	VMOVDQA X0, X6
	QRUN16(64, 16, 32)
	VPADDD  X6, X0, X0
	VMOVD   X0, (R10)
	ADDQ    $128, SI
	ADDQ    $64, DI
	ADDQ    $4, R9
	ADDQ    $4, R10
	DECQ    R8
	JNZ     block32
	VZEROUPPER
	RET
