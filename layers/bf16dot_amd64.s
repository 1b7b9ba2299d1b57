//go:build amd64 && !noasm

#include "textflag.h"

// Go's assembler has no AVX512_BF16 mnemonics, so the instructions are spelled in bytes
// (EVEX, checked against GNU as and objdump).

// func vdpbf16ps16(acc *[16]float32, x, w *[32]uint16)
TEXT ·vdpbf16ps16(SB), NOSPLIT, $0-24
	MOVQ acc+0(FP), AX
	MOVQ x+8(FP), BX
	MOVQ w+16(FP), CX
	VMOVUPS   (AX), Z0
	VMOVDQU32 (BX), Z1
	VMOVDQU32 (CX), Z2
	// VDPBF16PS Z2, Z1, Z0
	BYTE $0x62; BYTE $0xF2; BYTE $0x76; BYTE $0x48; BYTE $0x52; BYTE $0xC2
	VMOVUPS Z0, (AX)
	VZEROUPPER
	RET

// func vcvtneps2bf16x16(dst *[16]uint16, f *[16]float32)
TEXT ·vcvtneps2bf16x16(SB), NOSPLIT, $0-16
	MOVQ dst+0(FP), AX
	MOVQ f+8(FP), BX
	VMOVUPS (BX), Z0
	// VCVTNEPS2BF16 Z0, Y1
	BYTE $0x62; BYTE $0xF2; BYTE $0x7E; BYTE $0x48; BYTE $0x72; BYTE $0xC8
	VMOVDQU Y1, (AX)
	VZEROUPPER
	RET
