//go:build amd64 && !noasm

#include "textflag.h"
#include "bf16dot_amd64.h"

// The bf16-dot kernel for CPUs without AVX512_BF16 (bf16dot_avx2_amd64.go): VDPBF16PS
// emulated with AVX2 and FMA, bit for bit. A bf16 pair (even, odd) is one 32-bit word, so
// the odd element widened to f32 is the word with its low half cleared (VPAND) and the even
// one the word shifted left by 16 (VPSLLD). A product of two bf16 is exact in f32, so one
// VFMADD231PS per element is dpbf16's fused step, odd element first; MXCSR's DAZ and FTZ,
// set for the kernel's span and restored before it returns, are VDPBF16PS's subnormal
// inputs read as zero and subnormal results flushed.

#define MXCSR_DAZ_FTZ $0x8040

// STEP4(O, A, B) continues the 16 partial sums (A lanes 0-7, B lanes 8-15) of the output
// whose weight row is at register O by one 32-element step at offset AX: Y8/Y10 hold x's
// odd/even elements of pairs 0-7, Y9/Y11 of pairs 8-15, Y12 the mask of a word's high half.
#define STEP4(O, A, B) \
	VMOVDQU     (O)(AX*1), Y13; \
	VPAND       Y12, Y13, Y14; \
	VPSLLD      $16, Y13, Y13; \
	VFMADD231PS Y14, Y8, A; \
	VFMADD231PS Y13, Y10, A; \
	VMOVDQU     32(O)(AX*1), Y13; \
	VPAND       Y12, Y13, Y14; \
	VPSLLD      $16, Y13, Y13; \
	VFMADD231PS Y14, Y9, B; \
	VFMADD231PS Y13, Y11, B

// func bf16Dot4AVX2(acc *[4][16]float32, x *uint16, w unsafe.Pointer, off *[4]int, steps int)
TEXT ·bf16Dot4AVX2(SB), NOSPLIT, $8-40
	MOVQ acc+0(FP), DX
	MOVQ x+8(FP), DI
	MOVQ w+16(FP), AX
	MOVQ off+24(FP), CX
	ROWS4_16
	MOVQ steps+32(FP), CX
	SHLQ $6, CX // bytes of the steps

	STMXCSR 0(SP)
	MOVL    0(SP), AX
	ORL     MXCSR_DAZ_FTZ, AX
	MOVL    AX, 4(SP)
	LDMXCSR 4(SP)

	MOVL         $0xffff0000, AX
	MOVL         AX, X12
	VPBROADCASTD X12, Y12
	VMOVUPS      0(DX), Y0
	VMOVUPS      32(DX), Y1
	VMOVUPS      64(DX), Y2
	VMOVUPS      96(DX), Y3
	VMOVUPS      128(DX), Y4
	VMOVUPS      160(DX), Y5
	VMOVUPS      192(DX), Y6
	VMOVUPS      224(DX), Y7
	XORQ         AX, AX
	CMPQ         AX, CX
	JGE          done

loop:
	VMOVDQU (DI)(AX*1), Y13
	VPAND   Y12, Y13, Y8
	VPSLLD  $16, Y13, Y10
	VMOVDQU 32(DI)(AX*1), Y13
	VPAND   Y12, Y13, Y9
	VPSLLD  $16, Y13, Y11
	STEP4(R8, Y0, Y1)
	STEP4(R9, Y2, Y3)
	STEP4(R10, Y4, Y5)
	STEP4(R11, Y6, Y7)
	ADDQ    $64, AX
	CMPQ    AX, CX
	JLT     loop

done:
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	LDMXCSR 0(SP)
	VZEROUPPER
	RET
