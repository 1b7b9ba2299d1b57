//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 kernels of the package's reductions and softmax steps (reduce.go), bitwise its Go:
//
//	func dotAVX2(x, w *float32, n int) float32
//	func dot4AVX2(out *[4]float32, x, w0, w1, w2, w3 *float32, n int)
//	func sumAVX2(x *float32, n int) float32
//	func axpyAVX2(y *float32, a float32, x *float32, n int)
//	func axpy4AVX2(y *float32, a *[4]float32, x0, x1, x2, x3 *float32, n int)
//	func maxAVX2(x *float32, n int) float32
//	func expSubAVX2(x *float32, m float32, n int)
//	func swigluAVX2(out, gate, up *float32, n int)
//
// n ≥ 8 for all of them. A reduction keeps its 8 partial sums in one YMM register: lane j
// takes elements j, j+8, j+16, … in increasing order, one VMULPS and one VADDPS per
// element, never FMA (a fused multiply-add would round once where the Go rounds twice);
// COMBINE8 then adds the lanes in combine8's tree.
//
// The last n%8 elements: no kernel reads or writes outside its n elements (AMD leaves it to
// the implementation whether VMASKMOVPS faults on masked-off elements, so it is not used).
// A reduction loads the last 8 elements, which end at n, and rotates the last n%8 of them
// (or their products) into lanes 0..n%8−1 (VPERMPS by tailrot<>), then adds them onto a copy
// of the partial sums that VBLENDVPS keeps in those lanes only: dotAcc's tail loop, which
// adds element n&^7+k onto acc[k]. An element-wise kernel computes its last 8 outputs
// before its loop writes anything and stores them after it; where they overlap the loop's,
// both are the same operations on the same inputs, so the same bits.
//
// Operand order follows the Go expressions (x·w, acc + p, a·x, y + p; VEX instructions
// return their first source's NaN when both are NaN), so that NaN payloads match too.
//
// Registers: AX element index, BX n&^7, CX n, DX and R12 scratch, SI x, DI w or y or out,
// R8-R11 the four rows, Y14 the tail's rotation and Y15 its lane mask.

// tailmask<>: 8 words of ones, then 8 of zeros; the 8 words from byte 32 − 4r are the mask
// of the first r lanes.
DATA tailmask<>+0(SB)/8, $-1
DATA tailmask<>+8(SB)/8, $-1
DATA tailmask<>+16(SB)/8, $-1
DATA tailmask<>+24(SB)/8, $-1
DATA tailmask<>+32(SB)/8, $0
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// tailrot<>: 0..7 twice; the 8 words from byte 32 − 4r are the VPERMPS indices that move
// lanes 8−r … 7 to lanes 0 … r−1.
DATA tailrot<>+0(SB)/4, $0
DATA tailrot<>+4(SB)/4, $1
DATA tailrot<>+8(SB)/4, $2
DATA tailrot<>+12(SB)/4, $3
DATA tailrot<>+16(SB)/4, $4
DATA tailrot<>+20(SB)/4, $5
DATA tailrot<>+24(SB)/4, $6
DATA tailrot<>+28(SB)/4, $7
DATA tailrot<>+32(SB)/4, $0
DATA tailrot<>+36(SB)/4, $1
DATA tailrot<>+40(SB)/4, $2
DATA tailrot<>+44(SB)/4, $3
DATA tailrot<>+48(SB)/4, $4
DATA tailrot<>+52(SB)/4, $5
DATA tailrot<>+56(SB)/4, $6
DATA tailrot<>+60(SB)/4, $7
GLOBL tailrot<>(SB), RODATA|NOPTR, $64

// TAIL_SETUP jumps to DONE when n%8 = 0, else sets Y15 to the mask of the first n%8 lanes
// and Y14 to the rotation of the last n%8 lanes into them. Clobbers DX and R12.
#define TAIL_SETUP(DONE) \
	MOVQ    CX, R12; \
	ANDQ    $7, R12; \
	JZ      DONE; \
	NEGQ    R12; \
	LEAQ    tailmask<>+32(SB), DX; \
	VMOVUPS (DX)(R12*4), Y15; \
	LEAQ    tailrot<>+32(SB), DX; \
	VMOVDQU (DX)(R12*4), Y14

// TAIL_ADD adds the rotated last lanes of P onto the partial sums A, in the first n%8
// lanes only.
#define TAIL_ADD(P, A) \
	VPERMPS   P, Y14, P; \
	VADDPS    P, A, P; \
	VBLENDVPS Y15, P, A, A

// COMBINE8 leaves combine8 of the lanes of Y (X its low half) in the low word of X:
// ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7)). T is scratch.
#define COMBINE8(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS       T, X, X; \
	VMOVHLPS     X, X, T; \
	VADDPS       T, X, X; \
	VMOVSHDUP    X, T; \
	VADDSS       T, X, X

// func dotAVX2(x, w *float32, n int) float32
//
//	var acc [8]float32
//	for i := range n { acc[i%8] += float32(x[i] * w[i]) }
//	return combine8(&acc)
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ   x+0(FP), SI
	MOVQ   w+8(FP), DI
	MOVQ   n+16(FP), CX
	MOVQ   CX, BX
	ANDQ   $-8, BX
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0

dotloop:
	VMOVUPS (SI)(AX*4), Y4
	VMULPS  (DI)(AX*4), Y4, Y4
	VADDPS  Y4, Y0, Y0
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      dotloop

	TAIL_SETUP(dotdone)
	VMOVUPS -32(SI)(CX*4), Y4
	VMULPS  -32(DI)(CX*4), Y4, Y4
	TAIL_ADD(Y4, Y0)

dotdone:
	COMBINE8(Y0, X0, X1)
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// DOT4_TAIL_ROW adds the products of the last 8 of x (Y4) and of row R onto A's first lanes.
#define DOT4_TAIL_ROW(R, A) \
	VMULPS -32(R)(CX*4), Y4, Y5; \
	TAIL_ADD(Y5, A)

// func dot4AVX2(out *[4]float32, x, w0, w1, w2, w3 *float32, n int)
//
//	for r := range 4 {
//		var acc [8]float32
//		for i := range n { acc[i%8] += float32(x[i] * w_r[i]) }
//		out[r] = combine8(&acc)
//	}
//
// Four independent chains of adds, where one dot product waits on its single chain.
TEXT ·dot4AVX2(SB), NOSPLIT, $0-56
	MOVQ   x+8(FP), SI
	MOVQ   w0+16(FP), R8
	MOVQ   w1+24(FP), R9
	MOVQ   w2+32(FP), R10
	MOVQ   w3+40(FP), R11
	MOVQ   n+48(FP), CX
	MOVQ   CX, BX
	ANDQ   $-8, BX
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

dot4loop:
	VMOVUPS (SI)(AX*4), Y4
	VMULPS  (R8)(AX*4), Y4, Y5
	VMULPS  (R9)(AX*4), Y4, Y6
	VMULPS  (R10)(AX*4), Y4, Y7
	VMULPS  (R11)(AX*4), Y4, Y8
	VADDPS  Y5, Y0, Y0
	VADDPS  Y6, Y1, Y1
	VADDPS  Y7, Y2, Y2
	VADDPS  Y8, Y3, Y3
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      dot4loop

	TAIL_SETUP(dot4done)
	VMOVUPS -32(SI)(CX*4), Y4
	DOT4_TAIL_ROW(R8, Y0)
	DOT4_TAIL_ROW(R9, Y1)
	DOT4_TAIL_ROW(R10, Y2)
	DOT4_TAIL_ROW(R11, Y3)

dot4done:
	MOVQ out+0(FP), DI
	COMBINE8(Y0, X0, X4)
	COMBINE8(Y1, X1, X4)
	COMBINE8(Y2, X2, X4)
	COMBINE8(Y3, X3, X4)
	VZEROUPPER
	MOVSS X0, 0(DI)
	MOVSS X1, 4(DI)
	MOVSS X2, 8(DI)
	MOVSS X3, 12(DI)
	RET

// func sumAVX2(x *float32, n int) float32
//
//	var acc [8]float32
//	for i := range n { acc[i%8] += x[i] }
//	return combine8(&acc)
TEXT ·sumAVX2(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	MOVQ   CX, BX
	ANDQ   $-8, BX
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0

sumloop:
	VADDPS (SI)(AX*4), Y0, Y0
	ADDQ   $8, AX
	CMPQ   AX, BX
	JB     sumloop

	TAIL_SETUP(sumdone)
	VMOVUPS -32(SI)(CX*4), Y4
	TAIL_ADD(Y4, Y0)

sumdone:
	COMBINE8(Y0, X0, X1)
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET

// func axpyAVX2(y *float32, a float32, x *float32, n int)
//
//	for i := range n { y[i] += float32(a * x[i]) }
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	VBROADCASTSS a+8(FP), Y0
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	MOVQ         CX, BX
	ANDQ         $-8, BX
	XORQ         AX, AX
	TESTQ        $7, CX
	JZ           axpyloop
	VMULPS       -32(SI)(CX*4), Y0, Y3 // the last 8 outputs, stored after the loop
	VMOVUPS      -32(DI)(CX*4), Y4
	VADDPS       Y3, Y4, Y3

axpyloop:
	VMULPS  (SI)(AX*4), Y0, Y1
	VMOVUPS (DI)(AX*4), Y2
	VADDPS  Y1, Y2, Y2
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      axpyloop

	TESTQ   $7, CX
	JZ      axpydone
	VMOVUPS Y3, -32(DI)(CX*4)

axpydone:
	VZEROUPPER
	RET

// AXPY4_STEP sets Y4 to the 8 outputs at byte offset OFF from the index I (AX, or CX for the
// last 8): y + a0·x0, then + a1·x1, + a2·x2, + a3·x3, each product rounded first.
#define AXPY4_STEP(OFF, I) \
	VMOVUPS OFF(DI)(I*4), Y4; \
	VMULPS  OFF(R8)(I*4), Y0, Y5; \
	VMULPS  OFF(R9)(I*4), Y1, Y6; \
	VMULPS  OFF(R10)(I*4), Y2, Y7; \
	VMULPS  OFF(R11)(I*4), Y3, Y8; \
	VADDPS  Y5, Y4, Y4; \
	VADDPS  Y6, Y4, Y4; \
	VADDPS  Y7, Y4, Y4; \
	VADDPS  Y8, Y4, Y4

// func axpy4AVX2(y *float32, a *[4]float32, x0, x1, x2, x3 *float32, n int)
//
//	for i := range n {
//		y[i] = (((y[i] + float32(a[0]*x0[i])) + float32(a[1]*x1[i])) + float32(a[2]*x2[i])) + float32(a[3]*x3[i])
//	}
TEXT ·axpy4AVX2(SB), NOSPLIT, $0-56
	MOVQ         y+0(FP), DI
	MOVQ         a+8(FP), DX
	VBROADCASTSS 0(DX), Y0
	VBROADCASTSS 4(DX), Y1
	VBROADCASTSS 8(DX), Y2
	VBROADCASTSS 12(DX), Y3
	MOVQ         x0+16(FP), R8
	MOVQ         x1+24(FP), R9
	MOVQ         x2+32(FP), R10
	MOVQ         x3+40(FP), R11
	MOVQ         n+48(FP), CX
	MOVQ         CX, BX
	ANDQ         $-8, BX
	XORQ         AX, AX
	TESTQ        $7, CX
	JZ           axpy4loop
	AXPY4_STEP(-32, CX) // the last 8 outputs, stored after the loop
	VMOVUPS      Y4, Y9

axpy4loop:
	AXPY4_STEP(0, AX)
	VMOVUPS Y4, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      axpy4loop

	TESTQ   $7, CX
	JZ      axpy4done
	VMOVUPS Y9, -32(DI)(CX*4)

axpy4done:
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
//
//	m := x[0]
//	for _, v := range x[1:n] { if v > m { m = v } }
//	return m
//
// up to the sign of a zero maximum, which rowMax fixes. Every lane starts at x[0] and keeps
// max(v, m) = v > m ? v : m (VMAXPS returns its second source unless the first is greater,
// and NaN never is), so a NaN x[0] stays and any other NaN is skipped, as in the scan. A
// maximum does not mind seeing an element twice: the last 8 elements cover the tail.
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS (SI), Y0
	MOVQ         CX, BX
	ANDQ         $-8, BX
	XORQ         AX, AX

maxloop:
	VMOVUPS (SI)(AX*4), Y1
	VMAXPS  Y0, Y1, Y0
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      maxloop

	VMOVUPS      -32(SI)(CX*4), Y1
	VMAXPS       Y0, Y1, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X0, X1, X0
	VMOVHLPS     X0, X0, X1
	VMAXPS       X0, X1, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X0, X1, X0
	VZEROUPPER
	MOVSS        X0, ret+16(FP)
	RET

// expconst<>: rows of 8 copies (32 bytes) of the f32 constants of expf (exp.go), each the
// float32 the Go code converts its constant to.
#define EXPCONST(ROW, BITS) \
	DATA expconst<>+(ROW*32+0)(SB)/4, $BITS; \
	DATA expconst<>+(ROW*32+4)(SB)/4, $BITS; \
	DATA expconst<>+(ROW*32+8)(SB)/4, $BITS; \
	DATA expconst<>+(ROW*32+12)(SB)/4, $BITS; \
	DATA expconst<>+(ROW*32+16)(SB)/4, $BITS; \
	DATA expconst<>+(ROW*32+20)(SB)/4, $BITS; \
	DATA expconst<>+(ROW*32+24)(SB)/4, $BITS; \
	DATA expconst<>+(ROW*32+28)(SB)/4, $BITS

EXPCONST(0, 0x3fb8aa3b)  // log2e
EXPCONST(1, 0x3f000000)  // 0.5
EXPCONST(2, 0x3f318000)  // c1
EXPCONST(3, 0xb95e8083)  // c2
EXPCONST(4, 0x39506967)  // p0 1.9875691500e-4
EXPCONST(5, 0x3ab743ce)  // p1 1.3981999507e-3
EXPCONST(6, 0x3c088908)  // p2 8.3334519073e-3
EXPCONST(7, 0x3d2aa9c1)  // p3 4.1665795894e-2
EXPCONST(8, 0x3e2aaaaa)  // p4 1.6666665459e-1
EXPCONST(9, 0x3f000000)  // p5 5.0000001201e-1
EXPCONST(10, 0x3f800000) // 1
EXPCONST(11, 0x42b17217) // hi 88.72283
EXPCONST(12, 0xc2cff1b4) // lo −103.97208
EXPCONST(13, 0x7f800000) // +Inf
EXPCONST(14, 0x0000007f) // 127, the f32 exponent bias (int32)
GLOBL expconst<>(SB), RODATA|NOPTR, $480

#define LOG2E expconst<>+0(SB)
#define HALF expconst<>+32(SB)
#define C1 expconst<>+64(SB)
#define C2 expconst<>+96(SB)
#define P0 expconst<>+128(SB)
#define P1 expconst<>+160(SB)
#define P2 expconst<>+192(SB)
#define P3 expconst<>+224(SB)
#define P4 expconst<>+256(SB)
#define P5 expconst<>+288(SB)
#define ONE expconst<>+320(SB)
#define EXPHI expconst<>+352(SB)
#define EXPLO expconst<>+384(SB)
#define INF expconst<>+416(SB)
#define BIAS expconst<>+448(SB)

// EXPF sets Y2 to expf of the lanes of Y1, step for step the Go of expf, each operation
// rounded to f32 (exact for the integer ones); the lanes that expf returns early for (above
// hi, below lo, NaN) are computed anyway and then replaced by +Inf, 0 and x. Clobbers Y3-Y5.
#define EXPF \
	VMULPS     LOG2E, Y1, Y2; /* z := float32(x*log2e) + 0.5 */ \
	VADDPS     HALF, Y2, Y2; \
	VCVTTPS2DQ Y2, Y3; /* n := int32(z) */ \
	VCVTDQ2PS  Y3, Y4; \
	VCMPPS     $0x0e, Y2, Y4, Y4; /* float32(n) > z (GT_OS): n-- (the mask is −1) */ \
	VPADDD     Y4, Y3, Y3; \
	VCVTDQ2PS  Y3, Y4; /* fn := float32(n) */ \
	VMULPS     C1, Y4, Y5; /* r := x − float32(fn*c1) */ \
	VSUBPS     Y5, Y1, Y5; \
	VMULPS     C2, Y4, Y4; /* r −= float32(fn*c2) */ \
	VSUBPS     Y4, Y5, Y5; \
	VMULPS     P0, Y5, Y2; /* y = float32(y*r) + p, p0 … p5 */ \
	VADDPS     P1, Y2, Y2; \
	VMULPS     Y5, Y2, Y2; \
	VADDPS     P2, Y2, Y2; \
	VMULPS     Y5, Y2, Y2; \
	VADDPS     P3, Y2, Y2; \
	VMULPS     Y5, Y2, Y2; \
	VADDPS     P4, Y2, Y2; \
	VMULPS     Y5, Y2, Y2; \
	VADDPS     P5, Y2, Y2; \
	VMULPS     Y5, Y5, Y4; /* y = float32(y*float32(r*r)) + r + 1 */ \
	VMULPS     Y4, Y2, Y2; \
	VADDPS     Y5, Y2, Y2; \
	VADDPS     ONE, Y2, Y2; \
	VPSRAD     $1, Y3, Y4; /* n1 := n >> 1 */ \
	VPSUBD     Y4, Y3, Y3; /* n − n1 */ \
	VPADDD     BIAS, Y4, Y4; /* pow2(n1), pow2(n−n1) */ \
	VPSLLD     $23, Y4, Y4; \
	VPADDD     BIAS, Y3, Y3; \
	VPSLLD     $23, Y3, Y3; \
	VMULPS     Y4, Y2, Y2; /* y · pow2(n1) · pow2(n−n1) */ \
	VMULPS     Y3, Y2, Y2; \
	VCMPPS     $0x1e, EXPHI, Y1, Y4; /* x > hi (GT_OQ): +Inf */ \
	VBLENDVPS  Y4, INF, Y2, Y2; \
	VCMPPS     $0x11, EXPLO, Y1, Y4; /* x < lo (LT_OQ): 0 */ \
	VANDNPS    Y2, Y4, Y2; \
	VCMPPS     $3, Y1, Y1, Y4; /* x != x: x */ \
	VBLENDVPS  Y4, Y1, Y2, Y2

// func expSubAVX2(x *float32, m float32, n int)
//
//	for i := range n { x[i] = expf(x[i] - m) }
TEXT ·expSubAVX2(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), DI
	VBROADCASTSS m+8(FP), Y0
	MOVQ         n+16(FP), CX
	MOVQ         CX, BX
	ANDQ         $-8, BX
	XORQ         AX, AX
	TESTQ        $7, CX
	JZ           expsubloop
	VMOVUPS      -32(DI)(CX*4), Y1 // the last 8 outputs, stored after the loop
	VSUBPS       Y0, Y1, Y1
	EXPF
	VMOVUPS      Y2, Y6

expsubloop:
	VMOVUPS (DI)(AX*4), Y1
	VSUBPS  Y0, Y1, Y1
	EXPF
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      expsubloop

	TESTQ   $7, CX
	JZ      expsubdone
	VMOVUPS Y6, -32(DI)(CX*4)

expsubdone:
	VZEROUPPER
	RET

// SILU8(G, U) sets Y2 to silu(G)·U for 8 lanes, G a register of gates and U the address of
// the 8 ups: Go's gate / (1 + expf(-gate)) * up, its operands in that order. Y6 holds the
// f32 sign bits (-x flips it, as Go's negation does, NaNs included). Clobbers Y1, Y3-Y5.
#define SILU8(G, U) \
	VXORPS Y6, G, Y1; \
	EXPF; \
	VADDPS ONE, Y2, Y2; \
	VDIVPS Y2, G, Y2; \
	VMULPS U, Y2, Y2

// func swigluAVX2(out, gate, up *float32, n int)
//
//	for i := range n { out[i] = gate[i] / (1 + expf(-gate[i])) * up[i] }
//
// out may be gate or up: the last 8 outputs are computed before the loop stores anything.
TEXT ·swigluAVX2(SB), NOSPLIT, $0-32
	MOVQ         out+0(FP), DI
	MOVQ         gate+8(FP), SI
	MOVQ         up+16(FP), R8
	MOVQ         n+24(FP), CX
	MOVL         $0x80000000, DX
	MOVQ         DX, X6
	VPBROADCASTD X6, Y6
	MOVQ         CX, BX
	ANDQ         $-8, BX
	XORQ         AX, AX
	TESTQ        $7, CX
	JZ           swigluloop
	VMOVUPS      -32(SI)(CX*4), Y0 // the last 8 outputs, stored after the loop
	SILU8(Y0, -32(R8)(CX*4))
	VMOVUPS      Y2, Y7

swigluloop:
	VMOVUPS (SI)(AX*4), Y0
	SILU8(Y0, (R8)(AX*4))
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JB      swigluloop

	TESTQ   $7, CX
	JZ      swiglulast
	VMOVUPS Y7, -32(DI)(CX*4)

swiglulast:
	VZEROUPPER
	RET
