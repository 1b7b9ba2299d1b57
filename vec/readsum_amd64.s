//go:build amd64 && !noasm

#include "textflag.h"

// func readSumAVX2(x *float32, n int, acc *[32]float32)
// Y0-Y3 hold acc[0:8], acc[8:16], acc[16:24], acc[24:32]; each 32-element block of x is
// added onto them, accumulator first, in element order: exactly ReadSum's partials.
// n is a multiple of 32 and > 0; the accumulators are stored back into acc.
TEXT ·readSumAVX2(SB), NOSPLIT, $0-24
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    acc+16(FP), DI
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	SHRQ    $5, CX

readloop:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	DECQ   CX
	JNZ    readloop

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VZEROUPPER
	RET
