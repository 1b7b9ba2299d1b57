//go:build amd64 && !noasm

#include "textflag.h"

// func sumSquaresAVX2(x *float32, n int, p *[8]float32)
// Lane j of one accumulator, loaded from p[j], adds x[8k+j]² for k = 0, 1, …: exactly
// SumSquares' partial p[j], one multiply and one add per element (no FMA), in element
// order. n is a multiple of 8 and > 0; the accumulator is stored back into p.
TEXT ·sumSquaresAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ p+16(FP), DI
	VMOVUPS (DI), Y0
	SHRQ $3, CX

sqloop:
	VMOVUPS (SI), Y1
	VMULPS  Y1, Y1, Y1
	VADDPS  Y1, Y0, Y0
	ADDQ    $32, SI
	DECQ    CX
	JNZ     sqloop
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET

// func scaleMulAVX2(out, x, w *float32, n int, s float32)
// out[i] = (x[i]·s)·w[i], two roundings in that order, as the Go expression x[i]*s*w[i].
// n is a multiple of 8 and > 0; out may alias x.
TEXT ·scaleMulAVX2(SB), NOSPLIT, $0-36
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS s+32(FP), Y2
	SHRQ         $3, CX

mulloop:
	VMOVUPS (SI), Y0
	VMULPS  Y2, Y0, Y0
	VMOVUPS (DX), Y1
	VMULPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     mulloop
	VZEROUPPER
	RET
