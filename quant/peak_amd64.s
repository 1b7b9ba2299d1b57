//go:build amd64 && !noasm

#include "textflag.h"

// VPDPBUSD of Z16 (bytes 1, unsigned) and Z17 (bytes 1, signed) into each accumulator:
// every dword lane gains 4 a round.
#define DP16 \
	VPDPBUSD Z17, Z16, Z0; \
	VPDPBUSD Z17, Z16, Z1; \
	VPDPBUSD Z17, Z16, Z2; \
	VPDPBUSD Z17, Z16, Z3; \
	VPDPBUSD Z17, Z16, Z4; \
	VPDPBUSD Z17, Z16, Z5; \
	VPDPBUSD Z17, Z16, Z6; \
	VPDPBUSD Z17, Z16, Z7; \
	VPDPBUSD Z17, Z16, Z8; \
	VPDPBUSD Z17, Z16, Z9; \
	VPDPBUSD Z17, Z16, Z10; \
	VPDPBUSD Z17, Z16, Z11; \
	VPDPBUSD Z17, Z16, Z12; \
	VPDPBUSD Z17, Z16, Z13; \
	VPDPBUSD Z17, Z16, Z14; \
	VPDPBUSD Z17, Z16, Z15

// func vnniPeakLoop(n int) int
TEXT ·vnniPeakLoop(SB), NOSPLIT, $0-16
	MOVQ         n+0(FP), CX
	MOVL         $0x01010101, AX
	VPBROADCASTD AX, Z16
	VMOVDQA64    Z16, Z17
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3
	VPXORD       Z4, Z4, Z4
	VPXORD       Z5, Z5, Z5
	VPXORD       Z6, Z6, Z6
	VPXORD       Z7, Z7, Z7
	VPXORD       Z8, Z8, Z8
	VPXORD       Z9, Z9, Z9
	VPXORD       Z10, Z10, Z10
	VPXORD       Z11, Z11, Z11
	VPXORD       Z12, Z12, Z12
	VPXORD       Z13, Z13, Z13
	VPXORD       Z14, Z14, Z14
	VPXORD       Z15, Z15, Z15
	TESTQ        CX, CX
	JLE          sum

round:
	DP16
	DECQ CX
	JNZ  round

sum:
	VPADDD  Z1, Z0, Z0
	VPADDD  Z3, Z2, Z2
	VPADDD  Z5, Z4, Z4
	VPADDD  Z7, Z6, Z6
	VPADDD  Z9, Z8, Z8
	VPADDD  Z11, Z10, Z10
	VPADDD  Z13, Z12, Z12
	VPADDD  Z15, Z14, Z14
	VPADDD  Z2, Z0, Z0
	VPADDD  Z6, Z4, Z4
	VPADDD  Z10, Z8, Z8
	VPADDD  Z14, Z12, Z12
	VPADDD  Z4, Z0, Z0
	VPADDD  Z12, Z8, Z8
	VPADDD  Z8, Z0, Z0
	VMOVD   X0, AX
	MOVQ    AX, ret+8(FP)
	VZEROUPPER
	RET

// VFMADD231PS of Z16 (1.0) and Z17 (1.0) into each accumulator: every f32 lane gains 1 a
// round. Zen 5 has two FMA pipes of 4 cycles' latency, so 16 independent chains keep both
// busy with room to spare.
#define FMA16 \
	VFMADD231PS Z17, Z16, Z0; \
	VFMADD231PS Z17, Z16, Z1; \
	VFMADD231PS Z17, Z16, Z2; \
	VFMADD231PS Z17, Z16, Z3; \
	VFMADD231PS Z17, Z16, Z4; \
	VFMADD231PS Z17, Z16, Z5; \
	VFMADD231PS Z17, Z16, Z6; \
	VFMADD231PS Z17, Z16, Z7; \
	VFMADD231PS Z17, Z16, Z8; \
	VFMADD231PS Z17, Z16, Z9; \
	VFMADD231PS Z17, Z16, Z10; \
	VFMADD231PS Z17, Z16, Z11; \
	VFMADD231PS Z17, Z16, Z12; \
	VFMADD231PS Z17, Z16, Z13; \
	VFMADD231PS Z17, Z16, Z14; \
	VFMADD231PS Z17, Z16, Z15

// func fmaPeakLoop(n int) int
TEXT ·fmaPeakLoop(SB), NOSPLIT, $0-16
	MOVQ         n+0(FP), CX
	MOVL         $0x3f800000, AX // 1.0
	VPBROADCASTD AX, Z16
	VMOVDQA64    Z16, Z17
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3
	VPXORD       Z4, Z4, Z4
	VPXORD       Z5, Z5, Z5
	VPXORD       Z6, Z6, Z6
	VPXORD       Z7, Z7, Z7
	VPXORD       Z8, Z8, Z8
	VPXORD       Z9, Z9, Z9
	VPXORD       Z10, Z10, Z10
	VPXORD       Z11, Z11, Z11
	VPXORD       Z12, Z12, Z12
	VPXORD       Z13, Z13, Z13
	VPXORD       Z14, Z14, Z14
	VPXORD       Z15, Z15, Z15
	TESTQ        CX, CX
	JLE          fmasum

fmaround:
	FMA16
	DECQ CX
	JNZ  fmaround

fmasum:
	VADDPS     Z1, Z0, Z0
	VADDPS     Z3, Z2, Z2
	VADDPS     Z5, Z4, Z4
	VADDPS     Z7, Z6, Z6
	VADDPS     Z9, Z8, Z8
	VADDPS     Z11, Z10, Z10
	VADDPS     Z13, Z12, Z12
	VADDPS     Z15, Z14, Z14
	VADDPS     Z2, Z0, Z0
	VADDPS     Z6, Z4, Z4
	VADDPS     Z10, Z8, Z8
	VADDPS     Z14, Z12, Z12
	VADDPS     Z4, Z0, Z0
	VADDPS     Z12, Z8, Z8
	VADDPS     Z8, Z0, Z0
	VCVTTSS2SIQ X0, AX
	MOVQ       AX, ret+8(FP)
	VZEROUPPER
	RET

// func addChainLoop(n int) int
TEXT ·addChainLoop(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), CX
	XORQ AX, AX
	TESTQ CX, CX
	JLE  done

chain:
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	ADDQ $1, AX
	DECQ CX
	JNZ  chain

done:
	MOVQ AX, ret+8(FP)
	RET
