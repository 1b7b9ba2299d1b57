package layers

// This file holds the reduction order of the package's dot products, sums and norms (see the
// package documentation): Lanes partial sums, lane i%Lanes taking element i in increasing
// i, each product rounded to f32 before it is added, then the fixed tree of combine8.
// Linear layers keep the lanes and the tree but fuse each product into its sum (fma.go). The explicit
// float32 conversions around products keep the compiler from fusing a multiply and an add
// (which Go allows, and does on GOAMD64=v3): fusion would change the rounding.
//
// dot, dot4, sum, axpy, axpy4 and the softmax steps rowMax and expSub (reduce_amd64.go,
// reduce_other.go) run the AVX2 kernels of reduce_amd64.s where the CPU has them and the
// portable Go here (dotGo …) otherwise; both give the same bits, and the Go is the reference
// the kernels are tested against. (Except NaN payloads where two NaNs meet in an add or a
// multiply: x86 returns the first operand's, and which is first in the Go's compiled code is
// the register allocator's choice; either way the result is NaN.)

// Lanes is the number of independent partial sums in every dot product and sum of the
// package: element i of a reduction goes to partial sum i % Lanes. It is the width of one
// AVX2 register of f32, so an assembly kernel can keep one row's partial sums in one
// register and give bitwise-identical results.
const Lanes = 8

// combine8 adds the eight partial sums in the fixed tree an AVX2 horizontal add produces
// (high half onto low half, then pairs, then the last two):
//
//	((a[0]+a[4]) + (a[2]+a[6])) + ((a[1]+a[5]) + (a[3]+a[7]))
func combine8(a *[Lanes]float32) float32 {
	return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

// dotAcc continues eight partial sums with the products of x and w:
//
//	for i := range x { acc[i%8] += float32(x[i] * w[i]) }
//
// It is called tile by tile along a row, with every tile but the last a multiple of Lanes
// long, so that lane i%8 of a tile is lane i%8 of the row. len(w) ≥ len(x).
func dotAcc(acc *[Lanes]float32, x, w []float32) {
	w = w[:len(x)]
	a0, a1, a2, a3 := acc[0], acc[1], acc[2], acc[3]
	a4, a5, a6, a7 := acc[4], acc[5], acc[6], acc[7]
	n := len(x) &^ (Lanes - 1)
	for i := 0; i < n; i += Lanes {
		xs := (*[Lanes]float32)(x[i : i+Lanes])
		ws := (*[Lanes]float32)(w[i : i+Lanes])
		a0 += float32(xs[0] * ws[0])
		a1 += float32(xs[1] * ws[1])
		a2 += float32(xs[2] * ws[2])
		a3 += float32(xs[3] * ws[3])
		a4 += float32(xs[4] * ws[4])
		a5 += float32(xs[5] * ws[5])
		a6 += float32(xs[6] * ws[6])
		a7 += float32(xs[7] * ws[7])
	}
	acc[0], acc[1], acc[2], acc[3] = a0, a1, a2, a3
	acc[4], acc[5], acc[6], acc[7] = a4, a5, a6, a7
	for i := n; i < len(x); i++ {
		acc[i-n] += float32(x[i] * w[i])
	}
}

// dotGo is the package's dot product in portable Go (dot runs it, or the assembly where the
// CPU has AVX2): dotAcc from zero, then combine8.
//
//	var acc [8]float32
//	for i := range x { acc[i%8] += float32(x[i] * w[i]) }
//	return combine8(&acc)
func dotGo(x, w []float32) float32 {
	var acc [Lanes]float32
	dotAcc(&acc, x, w)
	return combine8(&acc)
}

// dot4Go is four dot products against one x in portable Go:
//
//	for r := range 4 { out[r] = dot(x, w_r) }
func dot4Go(out *[4]float32, x, w0, w1, w2, w3 []float32) {
	out[0], out[1], out[2], out[3] = dotGo(x, w0), dotGo(x, w1), dotGo(x, w2), dotGo(x, w3)
}

// sumGo is the package's sum in portable Go, in the order of dot:
//
//	var acc [8]float32
//	for i := range x { acc[i%8] += x[i] }
//	return combine8(&acc)
func sumGo(x []float32) float32 {
	var a0, a1, a2, a3, a4, a5, a6, a7 float32
	n := len(x) &^ (Lanes - 1)
	for i := 0; i < n; i += Lanes {
		xs := (*[Lanes]float32)(x[i : i+Lanes])
		a0 += xs[0]
		a1 += xs[1]
		a2 += xs[2]
		a3 += xs[3]
		a4 += xs[4]
		a5 += xs[5]
		a6 += xs[6]
		a7 += xs[7]
	}
	acc := [Lanes]float32{a0, a1, a2, a3, a4, a5, a6, a7}
	for i := n; i < len(x); i++ {
		acc[i-n] += x[i]
	}
	return combine8(&acc)
}

// axpyGo adds a·x into y element-wise in portable Go, each product rounded to f32 before
// the add:
//
//	for i := range y { y[i] += float32(a * x[i]) }
//
// len(x) ≥ len(y).
func axpyGo(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	n := len(y) &^ (Lanes - 1)
	for i := 0; i < n; i += Lanes {
		ys := (*[Lanes]float32)(y[i : i+Lanes])
		xs := (*[Lanes]float32)(x[i : i+Lanes])
		ys[0] += float32(a * xs[0])
		ys[1] += float32(a * xs[1])
		ys[2] += float32(a * xs[2])
		ys[3] += float32(a * xs[3])
		ys[4] += float32(a * xs[4])
		ys[5] += float32(a * xs[5])
		ys[6] += float32(a * xs[6])
		ys[7] += float32(a * xs[7])
	}
	for i := n; i < len(y); i++ {
		y[i] += float32(a * x[i])
	}
}

// axpy4Go adds four scaled rows into y in portable Go, in row order for every element:
//
//	for i := range y { y[i] = (((y[i] + float32(a[0]*x0[i])) + float32(a[1]*x1[i])) + float32(a[2]*x2[i])) + float32(a[3]*x3[i]) }
//
// which is axpy(y, a[0], x0) … axpy(y, a[3], x3) in one pass over y. Every x is at least
// len(y) long.
func axpy4Go(y []float32, a *[4]float32, x0, x1, x2, x3 []float32) {
	n := len(y)
	x0, x1, x2, x3 = x0[:n], x1[:n], x2[:n], x3[:n]
	a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
	i := 0
	for ; i+4 <= n; i += 4 {
		ys := (*[4]float32)(y[i : i+4])
		r0 := (*[4]float32)(x0[i : i+4])
		r1 := (*[4]float32)(x1[i : i+4])
		r2 := (*[4]float32)(x2[i : i+4])
		r3 := (*[4]float32)(x3[i : i+4])
		y0 := ys[0] + float32(a0*r0[0])
		y1 := ys[1] + float32(a0*r0[1])
		y2 := ys[2] + float32(a0*r0[2])
		y3 := ys[3] + float32(a0*r0[3])
		y0 += float32(a1 * r1[0])
		y1 += float32(a1 * r1[1])
		y2 += float32(a1 * r1[2])
		y3 += float32(a1 * r1[3])
		y0 += float32(a2 * r2[0])
		y1 += float32(a2 * r2[1])
		y2 += float32(a2 * r2[2])
		y3 += float32(a2 * r2[3])
		y0 += float32(a3 * r3[0])
		y1 += float32(a3 * r3[1])
		y2 += float32(a3 * r3[2])
		y3 += float32(a3 * r3[3])
		ys[0], ys[1], ys[2], ys[3] = y0, y1, y2, y3
	}
	for ; i < n; i++ {
		y[i] = (((y[i] + float32(a0*x0[i])) + float32(a1*x1[i])) + float32(a2*x2[i])) + float32(a3*x3[i])
	}
}

// rowMaxGo is the maximum of a softmax row (len(x) ≥ 1) in portable Go, by the scan
//
//	m := x[0]
//	for _, v := range x[1:] { if v > m { m = v } }
//	return m
//
// so a NaN x[0] is the result, any other NaN is skipped, and of equal values (+0 and −0)
// the first is kept.
func rowMaxGo(x []float32) float32 {
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	return m
}

// expSubGo is the softmax numerators in portable Go:
//
//	for i := range x { x[i] = expf(x[i] - m) }
func expSubGo(x []float32, m float32) {
	for i, v := range x {
		x[i] = expf(v - m)
	}
}
