package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tpslice/tpslice/dtype"
)

// Quantize encodes f32 values as GGML blocks of type t with llama.cpp's reference
// quantizers (ggml-quants.c's quantize_row_*_ref, what llama-quantize runs without an
// importance matrix), operation for operation in f32: Q8_0 scales by amax/127 and rounds
// half away from zero; Q4_0 scales by the signed value of largest magnitude over -8; Q4_K
// and Q5_K fit a scale and a min per 32 values (make_qkx2_quants) and quantize those to 6
// bits under f16 super-block scales; Q6_K fits a scale per 16 values (make_qx_quants) and
// quantizes it to int8. len(src) must be a whole number of blocks; dst receives
// t.Bytes(len(src)) bytes.
func Quantize(t dtype.DType, dst []byte, src []float32) error {
	if !t.Quantized() {
		return fmt.Errorf("quant: quantize: %v is not a block type", t)
	}
	if !t.Whole(len(src)) || len(dst) != t.Bytes(len(src)) {
		return fmt.Errorf("quant: quantize %d values to %v: want a whole number of %d-value blocks into %d bytes, have %d bytes",
			len(src), t, t.BlockSize(), t.Bytes(len(src)), len(dst))
	}
	bs, bb := t.BlockSize(), t.BlockBytes()
	for b := range len(src) / bs {
		blockQuantizers[t](dst[b*bb:(b+1)*bb], src[b*bs:(b+1)*bs])
	}
	return nil
}

// blockQuantizers encode one block of each type; never written.
var blockQuantizers = map[dtype.DType]func(b []byte, x []float32){
	dtype.Q8_0: quantQ8_0,
	dtype.Q4_0: quantQ4_0,
	dtype.Q4_K: func(b []byte, x []float32) { quantQxK(b, x, false) },
	dtype.Q5_K: func(b []byte, x []float32) { quantQxK(b, x, true) },
	dtype.Q6_K: quantQ6_K,
	dtype.Q5_0: quantQ5_0,
	dtype.Q5_1: quantQ5_1,
}

// nearestInt rounds half to even, as ggml's nearest_int (the 1.5·2²³ trick) does for the
// magnitudes it sees.
func nearestInt(f float32) int { return int(math.RoundToEven(float64(f))) }

func absf(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }

func quantQ8_0(b []byte, x []float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, absf(v))
	}
	d := amax / 127
	id := inverse(d)
	putF16(b, q80D, d)
	for j, v := range x {
		b[q80Qs+j] = byte(int8(math.Round(float64(float32(v * id)))))
	}
}

func quantQ4_0(b []byte, x []float32) {
	d, id := offsetScale(x, 8)
	putF16(b, q40D, d)
	level := func(v float32) byte { return byte(min(15, int8(float32(v*id)+8.5))) }
	for j := range 16 {
		b[q40Qs+j] = level(x[j]) | level(x[j+16])<<4
	}
}

// offsetScale is the scale d of Q4_0's and Q5_0's reference quantizers, whose values are
// offset by half: the value of largest magnitude (the first of equals) maps to -half, d =
// max/-half; and id its inverse.
func offsetScale(x []float32, half float32) (d, id float32) {
	var amax, mx float32
	for _, v := range x {
		if amax < absf(v) {
			amax, mx = absf(v), v
		}
	}
	d = mx / -half
	return d, inverse(d)
}

// inverse is 1/d, and 0 for a zero scale (an all-zero block), as the reference quantizers
// take it.
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// putFifthBits stores values j and j+16's five bits (lo, hi) into a Q5_0 or Q5_1 block
// whose qh and qs start at qh and qs (qh zeroed before the first j).
func putFifthBits(b []byte, qh, qs, j int, lo, hi uint8) {
	b[qs+j] = lo&0xF | (hi&0xF)<<4
	h := binary.LittleEndian.Uint32(b[qh:]) | uint32(lo>>4)<<j | uint32(hi>>4)<<(j+16)
	binary.LittleEndian.PutUint32(b[qh:], h)
}

// quantQ5_0 is quantize_row_q5_0_ref: Q4_0's rounding with 32 levels.
func quantQ5_0(b []byte, x []float32) {
	d, id := offsetScale(x, 16)
	putF16(b, q50D, d)
	clear(b[q50Qh : q50Qh+4])
	level := func(v float32) uint8 { return uint8(min(31, int8(float32(v*id)+16.5))) }
	for j := range 16 {
		putFifthBits(b, q50Qh, q50Qs, j, level(x[j]), level(x[j+16]))
	}
}

// quantQ5_1 is quantize_row_q5_1_ref: 32 levels from the block's min to its max.
func quantQ5_1(b []byte, x []float32) {
	lo, hi := float32(math.MaxFloat32), float32(-math.MaxFloat32)
	for _, v := range x { // the reference's comparisons: the first of ±0 stays
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	d := (hi - lo) / 31
	id := inverse(d)
	putF16(b, q51D, d)
	putF16(b, q51M, lo)
	clear(b[q51Qh : q51Qh+4])
	level := func(v float32) uint8 { return uint8(float32(float32(v-lo)*id) + 0.5) }
	for j := range 16 {
		putFifthBits(b, q51Qh, q51Qs, j, level(x[j]), level(x[j+16]))
	}
}

// quantQxK is quantize_row_q4_K_ref (q5 false) and quantize_row_q5_K_ref (q5 true).
func quantQxK(b []byte, x []float32, q5 bool) {
	nmax, rmin, nstep := 15, float32(-1), 20
	if q5 {
		nmax, rmin, nstep = 31, -0.5, 15
	}
	var L [kBlock]uint8
	var scales, mins [8]float32
	var maxScale, maxMin float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		var w [32]float32
		for l, v := range xs {
			w[l] = avX + absf(v)
		}
		scales[j], mins[j] = makeQKX2Quants(nmax, xs, w[:], L[32*j:32*j+32], rmin, 0.1, nstep)
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	var ls, lm [8]uint8
	for j := range 8 {
		ls[j] = min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm[j] = min(63, uint8(nearestInt(float32(invMin*mins[j]))))
	}
	scaleBytes := b[q4KScales : q4KScales+12]
	putScaleMinK4(scaleBytes, &ls, &lm)
	putF16(b, q4KD, maxScale/63)
	putF16(b, q4KDmin, maxMin/63)
	dAll, dminAll := f16At(b, q4KD), f16At(b, q4KDmin)
	for j := range 8 {
		sc, m := scaleMinK4(j, scaleBytes)
		d := float32(dAll * float32(sc))
		if d == 0 {
			continue
		}
		dm := float32(dminAll * float32(m))
		for i := range 32 {
			L[32*j+i] = uint8(max(0, min(nmax, nearestInt((x[32*j+i]+dm)/d))))
		}
	}
	if !q5 {
		for c := range 4 {
			for l := range 32 {
				b[q4KQs+32*c+l] = L[64*c+l] | L[64*c+32+l]<<4
			}
		}
		return
	}
	qh := b[q5KQh : q5KQh+32]
	clear(qh)
	for c := range 4 {
		for l := range 32 {
			lo, hi := L[64*c+l], L[64*c+32+l]
			if lo > 15 {
				lo -= 16
				qh[l] |= 1 << (2 * c)
			}
			if hi > 15 {
				hi -= 16
				qh[l] |= 2 << (2 * c)
			}
			b[q5KQs+32*c+l] = lo | hi<<4
		}
	}
}

// makeQKX2Quants is ggml's make_qkx2_quants without the mean-absolute-deviation option: it
// fits levels L (0..nmax) with x ≈ scale·L - min by weighted least squares over nstep+1
// trial scales, and returns the scale and min (min ≥ 0).
func makeQKX2Quants(nmax int, x, w []float32, L []uint8, rmin, rdelta float32, nstep int) (scale, theMin float32) {
	n := len(x)
	lo, hi := x[0], x[0]
	sumW, sumX := w[0], float32(w[0]*x[0])
	for i := 1; i < n; i++ {
		lo, hi = min(lo, x[i]), max(hi, x[i])
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	lo = min(lo, 0)
	if hi == lo {
		clear(L)
		return 0, -lo
	}
	level := func(iscale, v float32) uint8 {
		return uint8(max(0, min(nmax, nearestInt(float32(iscale*float32(v-lo))))))
	}
	iscale := float32(nmax) / (hi - lo)
	scale = 1 / iscale
	var best float32
	for i, v := range x {
		L[i] = level(iscale, v)
		diff := float32(float32(scale*float32(L[i]))+lo) - v
		best += float32(w[i] * float32(diff*diff))
	}
	var aux [32]uint8
	for is := 0; is <= nstep; is++ {
		iscale := float32(float32(rmin+float32(rdelta*float32(is)))+float32(nmax)) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := level(iscale, v)
			aux[i] = l
			wl := float32(w[i] * float32(l))
			sumL += wl
			sumL2 += float32(wl * float32(l))
			sumXL += float32(wl * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D <= 0 {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if thisMin > 0 {
			thisMin, thisScale = 0, sumXL/sumL2
		}
		var cur float32
		for i, v := range x {
			diff := float32(float32(thisScale*float32(aux[i]))+thisMin) - v
			cur += float32(w[i] * float32(diff*diff))
		}
		if cur < best {
			copy(L, aux[:n])
			best, scale, lo = cur, thisScale, thisMin
		}
	}
	return scale, -lo
}

// groupMaxEps is ggml's GROUP_MAX_EPS: a group whose largest magnitude is below it
// quantizes to zeros.
const groupMaxEps = 1e-15

func quantQ6_K(b []byte, x []float32) {
	var L [kBlock]int8 // levels -32..31
	var scales [16]float32
	var maxScale, maxAbsScale float32
	for ib := range 16 {
		scales[ib] = makeQXQuants(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
		if a := absf(scales[ib]); a > maxAbsScale {
			maxAbsScale, maxScale = a, scales[ib]
		}
	}
	clear(b)
	if maxAbsScale < groupMaxEps {
		return
	}
	iscale := -128 / maxScale
	putF16(b, q6KD, 1/iscale)
	for ib := range 16 {
		b[q6KScales+ib] = byte(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
	}
	dAll := f16At(b, q6KD)
	for j := range 16 {
		d := float32(dAll * float32(int8(b[q6KScales+j])))
		if d == 0 {
			continue
		}
		for i := range 16 {
			L[16*j+i] = int8(max(-32, min(31, nearestInt(x[16*j+i]/d))))
		}
	}
	for h := range 2 {
		ql, qh, l6 := b[q6KQl+64*h:], b[q6KQh+32*h:], L[128*h:]
		for l := range 32 {
			q1, q2, q3, q4 := uint8(l6[l]+32), uint8(l6[l+32]+32), uint8(l6[l+64]+32), uint8(l6[l+96]+32)
			ql[l] = q1&0xF | (q3&0xF)<<4
			ql[l+32] = q2&0xF | (q4&0xF)<<4
			qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
}

// makeQXQuants is ggml's make_qx_quants with rmse_type 1 (weights x²) and no importance
// matrix: levels -nmax..nmax-1 with x ≈ scale·L, the best of 19 trial scales by weighted
// least squares. It returns the (signed) scale and leaves the levels in L.
func makeQXQuants(nmax int, x []float32, L []int8) float32 {
	var amax, mx float32
	for _, v := range x {
		if a := absf(v); a > amax {
			amax, mx = a, v
		}
	}
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	level := func(iscale, v float32) int { return max(-nmax, min(nmax-1, nearestInt(float32(iscale*v)))) }
	sums := func(iscale float32) (sumLX, sumL2 float32) {
		for _, v := range x {
			l := float32(level(iscale, v))
			w := float32(v * v)
			sumLX += float32(float32(w*v) * l)
			sumL2 += float32(float32(w*l) * l)
		}
		return sumLX, sumL2
	}
	set := func(iscale float32) {
		for i, v := range x {
			L[i] = int8(level(iscale, v))
		}
	}
	iscale := float32(-nmax) / mx
	set(iscale)
	sumLX, sumL2 := sums(iscale)
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := float32(scale * sumLX)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale := -float32(float32(nmax)+float32(0.1*float32(is))) / mx
		sumLX, sumL2 := sums(iscale)
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			set(iscale)
			scale = sumLX / sumL2
			best = float32(scale * sumLX)
		}
	}
	return scale
}
