//go:build amd64 && !noasm

#include "textflag.h"

// AVX-512 kernels of QuantizeActs for one whole row (no padding):
//
//	func quantActs256AVX512(dst *byte, x *float32, nb int)  // Acts16x256, nb ≥ 1 blocks
//	func quantActs32AVX512(dst *byte, x *float32, nb int)   // Acts16x32
//
// Per block, as quantBlock16: amax = max|x| (exact in any order), d = amax/L and
// id = L/amax in f32 (id = 0 for amax = 0), q = x·id rounded half to even (VCVTPS2DQ under
// the default MXCSR); a NaN or an infinity in the block (|x|'s bits above 0x7f7fffff) makes
// d NaN and every q 0.

DATA absMask<>+0(SB)/4, $0x7fffffff
GLOBL absMask<>(SB), RODATA|NOPTR, $4
DATA maxFinite<>+0(SB)/4, $0x7f7fffff
GLOBL maxFinite<>(SB), RODATA|NOPTR, $4
DATA splitLimit<>+0(SB)/4, $32639.0
GLOBL splitLimit<>(SB), RODATA|NOPTR, $4
DATA nanF32<>+0(SB)/4, $0x7fc00000
GLOBL nanF32<>(SB), RODATA|NOPTR, $4

// ABSMAX(Z, ACC) folds |Z| into ACC and flags non-finite values in K1 (ORed into K2).
#define ABSMAX(Z, ACC) \
	VPANDD   Z31, Z, Z20; \
	VPCMPUD  $6, Z30, Z20, K1; \
	KORW     K1, K2, K2; \
	VMAXPS   Z20, ACC, ACC

// SCALE(ACC, LIMIT) reduces the 16 maxima in ACC to amax, stores d = amax/LIMIT at (R9)
// (NaN if K2 flagged a value) and leaves id = LIMIT/amax (0 for amax = 0, and for a flagged
// block, so that its values quantize to 0) broadcast in Z21, and K4 all ones unless
// amax is 0 or a value was flagged. Clobbers X22, X23, AX, BX,
// CX, DX, R11.
#define SCALE(ACC, YACC, XACC, LIMIT) \
	VEXTRACTF64X4 $1, ACC, Y22; \
	VMAXPS        Y22, YACC, YACC; \
	VEXTRACTF32X4 $1, YACC, X22; \
	VMAXPS        X22, XACC, XACC; \
	VMOVHLPS      XACC, XACC, X22; \
	VMAXPS        X22, XACC, XACC; \
	VMOVSHDUP     XACC, X22; \
	VMAXSS        X22, XACC, XACC; \
	VMOVSS        LIMIT, X23; \
	VDIVSS        X23, XACC, X22; \
	VMOVD         X22, DX; \
	VDIVSS        XACC, X23, X23; \
	VMOVD         XACC, R11; \
	KMOVW         K2, AX; \
	MOVL          nanF32<>(SB), BX; \
	TESTL         AX, AX; \
	CMOVLNE       BX, DX; \
	MOVL          DX, (R9); \
	SETEQ         CX; \
	TESTL         R11, R11; \
	SETNE         BX; \
	ANDL          BX, CX; \
	MOVBLZX       CL, CX; \
	NEGL          CX; \
	KMOVW         CX, K4; \
	VMOVD         CX, X22; \
	VANDPS        X22, X23, X23; \
	VBROADCASTSS  X23, Z21

// QUANT16(V) leaves the 16 int32 q of the values in V in V (zeros for a block K4 rules
// out).
#define QUANT16(V) \
	VMULPS      Z21, V, V; \
	VCVTPS2DQ.Z V, K4, V

// SPLIT(Z, OFF, HI) stores the 16 q of Z (int32) as their low bytes at OFF(DI) (lo plane)
// and high bytes at HI+OFF(DI) (hi plane, hi = (q - int8(q))/256); the q stay in Z.
#define SPLIT(Z, OFF, HI) \
	VPSLLD  $24, Z, Z20; \
	VPSRAD  $24, Z20, Z20; \
	VPMOVDB Z20, OFF(DI); \
	VPSUBD  Z20, Z, Z22; \
	VPSRAD  $8, Z22, Z22; \
	VPMOVDB Z22, (HI+OFF)(DI)

// HADDD(X, Y, T, D): per 128-bit lane k, D = [x4k+x4k+1, x4k+2+x4k+3, y4k+y4k+1,
// y4k+2+y4k+3].
#define HADDD(X, Y, T, D) \
	VSHUFPS $0x88, Y, X, T; \
	VSHUFPS $0xDD, Y, X, D; \
	VPADDD  T, D, D

// LANES4(G) adds G's four 128-bit lanes into each of them.
#define LANES4(G) \
	VSHUFI32X4 $0x4e, G, G, Z20; \
	VPADDD     Z20, G, G; \
	VSHUFI32X4 $0xb1, G, G, Z20; \
	VPADDD     Z20, G, G

// GSUMS leaves in Z0 the sums of the 16 int32 lanes of each of Z0..Z15, register r's in
// lane r: two levels of HADDD leave, in lane 4k+j of G_i (Z16+i), quarter k's sum of
// register 4i+j; adding the quarters and gathering lane 0 of each G gives the 16 sums in
// order. Clobbers Z0-Z19, Z22-Z29.
#define GSUMS \
	HADDD(Z0, Z1, Z20, Z22); \
	HADDD(Z2, Z3, Z20, Z23); \
	HADDD(Z4, Z5, Z20, Z24); \
	HADDD(Z6, Z7, Z20, Z25); \
	HADDD(Z8, Z9, Z20, Z26); \
	HADDD(Z10, Z11, Z20, Z27); \
	HADDD(Z12, Z13, Z20, Z28); \
	HADDD(Z14, Z15, Z20, Z29); \
	HADDD(Z22, Z23, Z20, Z16); \
	HADDD(Z24, Z25, Z20, Z17); \
	HADDD(Z26, Z27, Z20, Z18); \
	HADDD(Z28, Z29, Z20, Z19); \
	LANES4(Z16); \
	LANES4(Z17); \
	LANES4(Z18); \
	LANES4(Z19); \
	VSHUFI32X4 $0x00, Z17, Z16, Z16; \
	VSHUFI32X4 $0x00, Z19, Z18, Z18; \
	VSHUFI32X4 $0x88, Z18, Z16, Z0

// QSETUP(PLANESHIFT) loads the arguments of a row of nb blocks whose planes take
// 2^PLANESHIFT bytes a block: DI the planes, SI x, R8 nb, R9 the scales after the planes,
// R10 the sums after the scales; Z31 and Z30 the abs mask and the largest finite bits.
#define QSETUP(PLANESHIFT) \
	MOVQ         dst+0(FP), DI; \
	MOVQ         x+8(FP), SI; \
	MOVQ         nb+16(FP), R8; \
	MOVQ         R8, R9; \
	SHLQ         $PLANESHIFT, R9; \
	ADDQ         DI, R9; \
	LEAQ         (R9)(R8*4), R10; \
	VPBROADCASTD absMask<>(SB), Z31; \
	VPBROADCASTD maxFinite<>(SB), Z30

// func quantActs256AVX512(dst *byte, x *float32, nb int)
// Registers: DI the block's planes, SI x, R8 blocks left, R9 the block's scale, R10 its 16
// sums; the block's 256 values are Z0-Z15.
TEXT ·quantActs256AVX512(SB), NOSPLIT, $0-24
	QSETUP(9)

q256block:
	VMOVUPS  (SI), Z0
	VMOVUPS  64(SI), Z1
	VMOVUPS  128(SI), Z2
	VMOVUPS  192(SI), Z3
	VMOVUPS  256(SI), Z4
	VMOVUPS  320(SI), Z5
	VMOVUPS  384(SI), Z6
	VMOVUPS  448(SI), Z7
	VMOVUPS  512(SI), Z8
	VMOVUPS  576(SI), Z9
	VMOVUPS  640(SI), Z10
	VMOVUPS  704(SI), Z11
	VMOVUPS  768(SI), Z12
	VMOVUPS  832(SI), Z13
	VMOVUPS  896(SI), Z14
	VMOVUPS  960(SI), Z15
	KXORW    K2, K2, K2
	VXORPS   Z24, Z24, Z24
	ABSMAX(Z0, Z24)
	ABSMAX(Z1, Z24)
	ABSMAX(Z2, Z24)
	ABSMAX(Z3, Z24)
	ABSMAX(Z4, Z24)
	ABSMAX(Z5, Z24)
	ABSMAX(Z6, Z24)
	ABSMAX(Z7, Z24)
	ABSMAX(Z8, Z24)
	ABSMAX(Z9, Z24)
	ABSMAX(Z10, Z24)
	ABSMAX(Z11, Z24)
	ABSMAX(Z12, Z24)
	ABSMAX(Z13, Z24)
	ABSMAX(Z14, Z24)
	ABSMAX(Z15, Z24)
	SCALE(Z24, Y24, X24, splitLimit<>(SB))
	QUANT16(Z0)
	QUANT16(Z1)
	QUANT16(Z2)
	QUANT16(Z3)
	QUANT16(Z4)
	QUANT16(Z5)
	QUANT16(Z6)
	QUANT16(Z7)
	QUANT16(Z8)
	QUANT16(Z9)
	QUANT16(Z10)
	QUANT16(Z11)
	QUANT16(Z12)
	QUANT16(Z13)
	QUANT16(Z14)
	QUANT16(Z15)
	SPLIT(Z0, 0, 256)
	SPLIT(Z1, 16, 256)
	SPLIT(Z2, 32, 256)
	SPLIT(Z3, 48, 256)
	SPLIT(Z4, 64, 256)
	SPLIT(Z5, 80, 256)
	SPLIT(Z6, 96, 256)
	SPLIT(Z7, 112, 256)
	SPLIT(Z8, 128, 256)
	SPLIT(Z9, 144, 256)
	SPLIT(Z10, 160, 256)
	SPLIT(Z11, 176, 256)
	SPLIT(Z12, 192, 256)
	SPLIT(Z13, 208, 256)
	SPLIT(Z14, 224, 256)
	SPLIT(Z15, 240, 256)
	GSUMS
	VMOVDQU32 Z0, (R10)
	ADDQ     $1024, SI
	ADDQ     $512, DI
	ADDQ     $4, R9
	ADDQ     $64, R10
	DECQ     R8
	JNZ      q256block
	VZEROUPPER
	RET

// func quantActs32AVX512(dst *byte, x *float32, nb int)
// Registers: DI the block's planes, SI x, R8 blocks left, R9 the block's scale, R10 its
// sum; the block's 32 values are Z0-Z1.
TEXT ·quantActs32AVX512(SB), NOSPLIT, $0-24
	QSETUP(6)

q32block:
	VMOVUPS       (SI), Z0
	VMOVUPS       64(SI), Z1
	KXORW         K2, K2, K2
	VXORPS        Z24, Z24, Z24
	ABSMAX(Z0, Z24)
	ABSMAX(Z1, Z24)
	SCALE(Z24, Y24, X24, splitLimit<>(SB))
	QUANT16(Z0)
	QUANT16(Z1)
	SPLIT(Z0, 0, 32)
	SPLIT(Z1, 16, 32)
	VPADDD        Z1, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD        Y1, Y0, Y0
	VEXTRACTI128  $1, Y0, X1
	VPADDD        X1, X0, X0
	VPSHUFD       $0x4e, X0, X1
	VPADDD        X1, X0, X0
	VPSHUFD       $0xb1, X0, X1
	VPADDD        X1, X0, X0
	VMOVD         X0, (R10)
	ADDQ          $128, SI
	ADDQ          $64, DI
	ADDQ          $4, R9
	ADDQ          $4, R10
	DECQ          R8
	JNZ           q32block
	VZEROUPPER
	RET
