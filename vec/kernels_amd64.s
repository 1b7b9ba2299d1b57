//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 + F16C kernels. Every kernel computes, lane by lane, exactly the scalar operation of
// the reference loop it replaces (one IEEE add per source in source order, the integer
// round-to-nearest-even of dtype.F32ToBF16, the RNE conversions of F16C), so the results are
// bitwise identical. No kernel uses FMA or any reassociation.

// ---- bf16 narrowing ------------------------------------------------------------------------
//
// BF16_CONSTS loads the constants NARROW_BF16 uses: Y8 = 1, Y9 = 0x7fff, Y10 = 0x40 (every
// dword).
#define BF16_CONSTS \
	MOVL $1, AX; VMOVD AX, X8; VPBROADCASTD X8, Y8; \
	MOVL $0x7fff, AX; VMOVD AX, X9; VPBROADCASTD X9, Y9; \
	MOVL $0x40, AX; VMOVD AX, X10; VPBROADCASTD X10, Y10

// NARROW_BF16 turns the eight f32 bit patterns u in Y into eight bf16 patterns, one per
// dword (high halves zero), exactly as dtype.F32ToBF16:
//	NaN: u>>16 | 0x40;  otherwise: (u + 0x7fff + (u>>16)&1) >> 16  (mod 2³², as in Go).
// VCMPPS predicate 3 (unordered) is true exactly for NaN lanes, the lanes with
// u&0x7fffffff > 0x7f800000. T1, T2, T3 are clobbered.
#define NARROW_BF16(Y, T1, T2, T3) \
	VPSRLD $16, Y, T1; \
	VCMPPS $3, Y, Y, T2; \
	VPAND Y8, T1, T3; \
	VPADDD Y9, Y, Y; \
	VPADDD T3, Y, Y; \
	VPSRLD $16, Y, Y; \
	VPOR Y10, T1, T1; \
	VPBLENDVB T2, T1, Y, Y

// PACK_BF16 packs the 16 dword results in LO (elements 0-7) and HI (8-15) into 16 words in
// order, in LO.
#define PACK_BF16(LO, HI) \
	VPACKUSDW HI, LO, LO; \
	VPERMQ $0xD8, LO, LO

// ---- n-way sums ----------------------------------------------------------------------------
//
// The sum kernels take dst pointing at element off of the destination, srcs pointing at the
// first of nsrc ≥ 1 slice headers (24 bytes each: data, len, cap), and n > 0, a multiple of
// 32. For each block of 32 elements they load srcs[0], add srcs[1], …, srcs[nsrc-1] in that
// order, and only then store the block, so dst may be one of the srcs.
//
// Registers: DI dst, R8 srcs, R9 nsrc, R10 byte offset of the block in every src, CX elements
// left, R11 sources left, R12 current header, R13 current data pointer.

#define SUM_PROLOGUE(SHIFT) \
	MOVQ dst+0(FP), DI; \
	MOVQ srcs+8(FP), R8; \
	MOVQ nsrc+16(FP), R9; \
	MOVQ off+24(FP), R10; \
	SHLQ $SHIFT, R10; \
	MOVQ n+32(FP), CX

// SUM_FIRST_SRC points R13 at the data of srcs[0], R12 at the header of srcs[1] and sets
// R11 to the number of sources still to add.
#define SUM_FIRST_SRC \
	MOVQ (R8), R13; \
	LEAQ 24(R8), R12; \
	MOVQ R9, R11; \
	DECQ R11

// WIDEN_BF16_4 widens the 32 bf16 elements of the block: unpacking each word above a zero
// word is the shift by 16. The unpacks work within 128-bit lanes, so the four registers hold
// the elements as Y0_ = 0-3,8-11  Y1_ = 4-7,12-15  Y2_ = 16-19,24-27  Y3_ = 20-23,28-31:
// every source is permuted alike, so lane-wise sums are unaffected, and VPACKUSDW (in
// NARROW_BF16 order) or UNPERMUTE_F32_4 restores the order. Y15 must be zero.
#define WIDEN_BF16_4(Y0_, Y1_, Y2_, Y3_) \
	VPUNPCKLWD (R13)(R10*1), Y15, Y0_; \
	VPUNPCKHWD (R13)(R10*1), Y15, Y1_; \
	VPUNPCKLWD 32(R13)(R10*1), Y15, Y2_; \
	VPUNPCKHWD 32(R13)(R10*1), Y15, Y3_

// UNPERMUTE_F32_4 puts the accumulators of WIDEN_BF16_4 order back into element order in
// Y4-Y7 (Y4 = 0-7, …, Y7 = 24-31).
#define UNPERMUTE_F32_4 \
	VPERM2I128 $0x20, Y1, Y0, Y4; \
	VPERM2I128 $0x31, Y1, Y0, Y5; \
	VPERM2I128 $0x20, Y3, Y2, Y6; \
	VPERM2I128 $0x31, Y3, Y2, Y7

// WIDEN_F16_4 widens the 32 f16 elements of the block in order.
#define WIDEN_F16_4(Y0_, Y1_, Y2_, Y3_) \
	VCVTPH2PS (R13)(R10*1), Y0_; \
	VCVTPH2PS 16(R13)(R10*1), Y1_; \
	VCVTPH2PS 32(R13)(R10*1), Y2_; \
	VCVTPH2PS 48(R13)(R10*1), Y3_

// ADD_4 adds the widened block of the next source to the accumulators, accumulator first
// (the operand whose payload x86 keeps when both are NaN).
#define ADD_4 \
	VADDPS Y4, Y0, Y0; \
	VADDPS Y5, Y1, Y1; \
	VADDPS Y6, Y2, Y2; \
	VADDPS Y7, Y3, Y3

#define STORE_F32_4 \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI)

// ---- AddF32 ------------------------------------------------------------------------------

// func addF32AVX2(dst, src *float32, n int)
TEXT ·addF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JB   add8

add32:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS  (SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     add32

add8:
	CMPQ    CX, $8
	JB      add1
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     add8

add1:
	TESTQ  CX, CX
	JZ     addDone
	VMOVSS (DI), X0
	VADDSS (SI), X0, X0
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   $4, SI
	DECQ   CX
	JMP    add1

addDone:
	VZEROUPPER
	RET

// ---- Widen -------------------------------------------------------------------------------

// func widenBF16AVX2(dst *float32, src *uint16, n int)
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JB   wb8

wb32:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPMOVZXWD 32(SI), Y2
	VPMOVZXWD 48(SI), Y3
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VPSLLD    $16, Y2, Y2
	VPSLLD    $16, Y3, Y3
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	VMOVDQU   Y2, 64(DI)
	VMOVDQU   Y3, 96(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	CMPQ      CX, $32
	JAE       wb32

wb8:
	CMPQ      CX, $8
	JB        wb1
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       wb8

wb1:
	TESTQ   CX, CX
	JZ      wbDone
	MOVWLZX (SI), AX
	SHLL    $16, AX
	MOVL    AX, (DI)
	ADDQ    $2, SI
	ADDQ    $4, DI
	DECQ    CX
	JMP     wb1

wbDone:
	VZEROUPPER
	RET

// func widenF16AVX2(dst *float32, src *uint16, n int)
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JB   wh8

wh32:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VCVTPH2PS 32(SI), Y2
	VCVTPH2PS 48(SI), Y3
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	VMOVUPS   Y2, 64(DI)
	VMOVUPS   Y3, 96(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	CMPQ      CX, $32
	JAE       wh32

wh8:
	CMPQ      CX, $8
	JB        wh1
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       wh8

wh1:
	TESTQ     CX, CX
	JZ        whDone
	MOVWLZX   (SI), AX
	VMOVD     AX, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (DI)
	ADDQ      $2, SI
	ADDQ      $4, DI
	DECQ      CX
	JMP       wh1

whDone:
	VZEROUPPER
	RET

// ---- Narrow ------------------------------------------------------------------------------

// func narrowBF16AVX2(dst *uint16, src *float32, n int)
TEXT ·narrowBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	BF16_CONSTS
	CMPQ CX, $32
	JB   nb8

nb32:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	NARROW_BF16(Y0, Y4, Y5, Y6)
	NARROW_BF16(Y1, Y7, Y13, Y14)
	NARROW_BF16(Y2, Y4, Y5, Y6)
	NARROW_BF16(Y3, Y7, Y13, Y14)
	PACK_BF16(Y0, Y1)
	PACK_BF16(Y2, Y3)
	VMOVDQU Y0, (DI)
	VMOVDQU Y2, 32(DI)
	ADDQ    $128, SI
	ADDQ    $64, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     nb32

nb8:
	CMPQ         CX, $8
	JB           nb1
	VMOVDQU      (SI), Y0
	NARROW_BF16(Y0, Y4, Y5, Y6)
	VEXTRACTI128 $1, Y0, X1
	VPACKUSDW    X1, X0, X0
	VMOVDQU      X0, (DI)
	ADDQ         $32, SI
	ADDQ         $16, DI
	SUBQ         $8, CX
	JMP          nb8

nb1:
	TESTQ CX, CX
	JZ    nbDone
	MOVL  (SI), AX
	MOVL  AX, DX
	ANDL  $0x7fffffff, DX
	CMPL  DX, $0x7f800000
	JA    nbNaN
	MOVL  AX, DX
	SHRL  $16, DX
	ANDL  $1, DX
	ADDL  $0x7fff, AX
	ADDL  DX, AX
	SHRL  $16, AX
	JMP   nbStore

nbNaN:
	SHRL $16, AX
	ORL  $0x40, AX

nbStore:
	MOVW AX, (DI)
	ADDQ $4, SI
	ADDQ $2, DI
	DECQ CX
	JMP  nb1

nbDone:
	VZEROUPPER
	RET

// func narrowF16AVX2(dst *uint16, src *float32, n int)
TEXT ·narrowF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JB   nh8

nh32:
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y1
	VMOVUPS   64(SI), Y2
	VMOVUPS   96(SI), Y3
	VCVTPS2PH $0, Y0, (DI)
	VCVTPS2PH $0, Y1, 16(DI)
	VCVTPS2PH $0, Y2, 32(DI)
	VCVTPS2PH $0, Y3, 48(DI)
	ADDQ      $128, SI
	ADDQ      $64, DI
	SUBQ      $32, CX
	CMPQ      CX, $32
	JAE       nh32

nh8:
	CMPQ      CX, $8
	JB        nh1
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	SUBQ      $8, CX
	JMP       nh8

nh1:
	TESTQ     CX, CX
	JZ        nhDone
	VMOVSS    (SI), X0
	VCVTPS2PH $0, X0, X1
	VMOVD     X1, AX
	MOVW      AX, (DI)
	ADDQ      $4, SI
	ADDQ      $2, DI
	DECQ      CX
	JMP       nh1

nhDone:
	VZEROUPPER
	RET

// ---- n-way sums (see the register map above) -----------------------------------------------

// func sumF32AVX2(dst *float32, srcs *[]float32, nsrc, off, n int)
TEXT ·sumF32AVX2(SB), NOSPLIT, $0-40
	SUM_PROLOGUE(2)

sfBlock:
	SUM_FIRST_SRC
	VMOVUPS (R13)(R10*1), Y0
	VMOVUPS 32(R13)(R10*1), Y1
	VMOVUPS 64(R13)(R10*1), Y2
	VMOVUPS 96(R13)(R10*1), Y3
	TESTQ   R11, R11
	JZ      sfStore

sfSrc:
	MOVQ   (R12), R13
	VADDPS (R13)(R10*1), Y0, Y0
	VADDPS 32(R13)(R10*1), Y1, Y1
	VADDPS 64(R13)(R10*1), Y2, Y2
	VADDPS 96(R13)(R10*1), Y3, Y3
	ADDQ   $24, R12
	DECQ   R11
	JNZ    sfSrc

sfStore:
	STORE_F32_4
	ADDQ $128, DI
	ADDQ $128, R10
	SUBQ $32, CX
	JNZ  sfBlock
	VZEROUPPER
	RET

// func sum16BF16AVX2(dst *uint16, srcs *[]uint16, nsrc, off, n int)
TEXT ·sum16BF16AVX2(SB), NOSPLIT, $0-40
	SUM_PROLOGUE(1)
	BF16_CONSTS
	VPXOR Y15, Y15, Y15

s16bBlock:
	SUM_FIRST_SRC
	WIDEN_BF16_4(Y0, Y1, Y2, Y3)
	TESTQ R11, R11
	JZ    s16bStore

s16bSrc:
	MOVQ (R12), R13
	WIDEN_BF16_4(Y4, Y5, Y6, Y7)
	ADD_4
	ADDQ $24, R12
	DECQ R11
	JNZ  s16bSrc

s16bStore:
	NARROW_BF16(Y0, Y4, Y5, Y6)
	NARROW_BF16(Y1, Y7, Y13, Y14)
	NARROW_BF16(Y2, Y4, Y5, Y6)
	NARROW_BF16(Y3, Y7, Y13, Y14)
	VPACKUSDW Y1, Y0, Y0 // in-lane pack undoes the in-lane unpack: elements 0-15 in order
	VPACKUSDW Y3, Y2, Y2
	VMOVDQU Y0, (DI)
	VMOVDQU Y2, 32(DI)
	ADDQ    $64, DI
	ADDQ    $64, R10
	SUBQ    $32, CX
	JNZ     s16bBlock
	VZEROUPPER
	RET

// func sum16F16AVX2(dst *uint16, srcs *[]uint16, nsrc, off, n int)
TEXT ·sum16F16AVX2(SB), NOSPLIT, $0-40
	SUM_PROLOGUE(1)

s16hBlock:
	SUM_FIRST_SRC
	WIDEN_F16_4(Y0, Y1, Y2, Y3)
	TESTQ R11, R11
	JZ    s16hStore

s16hSrc:
	MOVQ (R12), R13
	WIDEN_F16_4(Y4, Y5, Y6, Y7)
	ADD_4
	ADDQ $24, R12
	DECQ R11
	JNZ  s16hSrc

s16hStore:
	VCVTPS2PH $0, Y0, (DI)
	VCVTPS2PH $0, Y1, 16(DI)
	VCVTPS2PH $0, Y2, 32(DI)
	VCVTPS2PH $0, Y3, 48(DI)
	ADDQ      $64, DI
	ADDQ      $64, R10
	SUBQ      $32, CX
	JNZ       s16hBlock
	VZEROUPPER
	RET

// func sum16ToF32BF16AVX2(dst *float32, srcs *[]uint16, nsrc, off, n int)
TEXT ·sum16ToF32BF16AVX2(SB), NOSPLIT, $0-40
	SUM_PROLOGUE(1)
	VPXOR Y15, Y15, Y15

s16wbBlock:
	SUM_FIRST_SRC
	WIDEN_BF16_4(Y0, Y1, Y2, Y3)
	TESTQ R11, R11
	JZ    s16wbStore

s16wbSrc:
	MOVQ (R12), R13
	WIDEN_BF16_4(Y4, Y5, Y6, Y7)
	ADD_4
	ADDQ $24, R12
	DECQ R11
	JNZ  s16wbSrc

s16wbStore:
	UNPERMUTE_F32_4
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ $128, DI
	ADDQ $64, R10
	SUBQ $32, CX
	JNZ  s16wbBlock
	VZEROUPPER
	RET

// func sum16ToF32F16AVX2(dst *float32, srcs *[]uint16, nsrc, off, n int)
TEXT ·sum16ToF32F16AVX2(SB), NOSPLIT, $0-40
	SUM_PROLOGUE(1)

s16whBlock:
	SUM_FIRST_SRC
	WIDEN_F16_4(Y0, Y1, Y2, Y3)
	TESTQ R11, R11
	JZ    s16whStore

s16whSrc:
	MOVQ (R12), R13
	WIDEN_F16_4(Y4, Y5, Y6, Y7)
	ADD_4
	ADDQ $24, R12
	DECQ R11
	JNZ  s16whSrc

s16whStore:
	STORE_F32_4
	ADDQ $128, DI
	ADDQ $64, R10
	SUBQ $32, CX
	JNZ  s16whBlock
	VZEROUPPER
	RET
