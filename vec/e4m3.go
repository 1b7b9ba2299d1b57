package vec

import (
	"math"

	"github.com/tpslice/tpslice/dtype"
)

// E4M3Block is how many values share one scale in QuantizeE4M3's blocks: QuickReduce's
// group size, and the OCP microscaling (MX) block size.
const E4M3Block = 32

// E4M3Scales is the number of scales n values take: one per block, the last one short.
func E4M3Scales(n int) int { return (n + E4M3Block - 1) / E4M3Block }

// QuantizeE4M3 encodes src as e4m3 codes with one f32 scale per block of E4M3Block values
// (the last block may be short), scaled so that the block's largest magnitude maps to 448:
//
//	for each block k of values x:
//	    amax := max |x[i]| over the finite x[i];  s := amax / 448   (f32)
//	    scales[k] = s
//	    codes[i] = dtype.F32ToE4M3(x[i] / s)   (0 where s is 0; the NaN code where x[i] is not finite)
//
// A value decodes as dtype.E4M3ToF32(code)·s, within 2^-4·amax of x (e4m3 keeps 4
// significant bits; below 2^-6·s the absolute error is at most 2^-10·s). Infinities and
// NaNs do not poison their block's scale, but decode as NaN: e4m3 has no infinity. codes
// must hold len(src), scales E4M3Scales(len(src)).
func QuantizeE4M3(codes []uint8, scales []float32, src []float32) {
	codes, scales = codes[:len(src)], scales[:E4M3Scales(len(src))]
	for k := range scales {
		x := src[k*E4M3Block : min(len(src), (k+1)*E4M3Block)]
		c := codes[k*E4M3Block : k*E4M3Block+len(x)]
		var amax float32
		for _, v := range x {
			if a := abs32(v); a > amax && a <= math.MaxFloat32 {
				amax = a
			}
		}
		s := amax / dtype.E4M3Max
		scales[k] = s
		for i, v := range x {
			switch {
			case abs32(v) > math.MaxFloat32 || v != v:
				c[i] = dtype.E4M3NaN | uint8(math.Float32bits(v)>>24)&0x80
			case s == 0:
				c[i] = 0
			default:
				c[i] = dtype.F32ToE4M3(v / s)
			}
		}
	}
}

// SumE4M3 writes the element-wise sum of the decoded sources into dst, adding in the
// order the sources are given, in f32, as SumF32 does:
//
//	for i := range dst {
//	    acc := E4M3ToF32(codes[0][i]) · scales[0][i/E4M3Block]
//	    for k := 1; k < len(codes); k++ { acc += E4M3ToF32(codes[k][i]) · scales[k][i/E4M3Block] }
//	    dst[i] = acc
//	}
//
// Each product is rounded to f32 before it is added (no fused multiply-add). codes[k] must
// hold len(dst) codes whose first starts a block, scales[k] E4M3Scales(len(dst)) scales;
// codes must not be empty. dst may not alias the codes.
func SumE4M3(dst []float32, codes [][]uint8, scales [][]float32) {
	nb := E4M3Scales(len(dst))
	for k := range codes {
		_, _ = codes[k][:len(dst)], scales[k][:nb]
	}
	for b := range nb {
		d := dst[b*E4M3Block : min(len(dst), (b+1)*E4M3Block)]
		c, s := codes[0][b*E4M3Block:][:len(d)], scales[0][b]
		for i := range d {
			d[i] = float32(e4m3Values[c[i]] * s)
		}
		for k := 1; k < len(codes); k++ {
			c, s := codes[k][b*E4M3Block:][:len(d)], scales[k][b]
			for i := range d {
				d[i] += float32(e4m3Values[c[i]] * s)
			}
		}
	}
}

// e4m3Values holds dtype.E4M3ToF32 of every code; it is never written.
var e4m3Values = func() (v [256]float32) {
	for c := range v {
		v[c] = dtype.E4M3ToF32(uint8(c))
	}
	return v
}()

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }
