package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tpslice/tpslice/dtype"
)

// Acts is how a row of f32 activations is quantized for the dot products of a weight type:
// 16-bit integers in blocks that share an f32 scale.
//
// Why 16 bits, where llama.cpp uses 8: rounding activations to 8 bits moves logits by about
// 1e-2 on the tiny test models and 0.05-0.13 on 400M-parameter ones, and that rounding is
// chaotic: measured here, nudging every embedding value by one ulp moved the step-0 logits
// of the Q4_K_M test model by 7e-3 in 7 of 11 trials, so no reordering of a sum (another
// TP degree, another kernel) reproduces a result to better than the quantization noise. At
// 16 bits the rounding error is 256 times smaller, the logits stay within about 1e-5 of the
// float64 oracle and identical TP degrees give identical greedy ids. The integer products
// stay exact, split into two byte planes multiplied with the weights' bytes twice
// (VPDPBUSD, 64 products an instruction), and the kernels stay bound by the weight bytes
// they read (BenchmarkDot).
type Acts uint8

const (
	// Acts16x32 quantizes blocks of 32 activations, for Q8_0, Q4_0, Q5_0 and Q5_1 weights,
	// to at most ±32639 so that each value splits into two signed bytes, q = 256·hi + lo
	// (lo the low byte as int8): the kernels multiply bytes of weights with bytes of
	// activations (VPDPBUSD), once per byte plane. A row of nb blocks is, per block,
	// lo[32] then hi[32] (int8), then d[nb] f32, then s[nb] int32, the sums of each
	// block's q.
	Acts16x32 Acts = iota + 1
	// Acts16x256 quantizes blocks of 256, for the K-quants, split into byte planes as
	// Acts16x32 is; its sums over each 16 values meet the K-quants' sub-block minimums. A
	// row of ns blocks is, per block,
	// lo[256] then hi[256] (int8), then d[ns] f32, then g[16·ns] int32, the sums of q over
	// each 16.
	Acts16x256

	// MaxActs is the largest format, to size tables indexed by format.
	MaxActs = Acts16x256
)

// splitLimit is the largest magnitude a quantized activation takes (a block's largest maps
// to it): the largest 256·hi + lo with both bytes signed.
const splitLimit = 127*256 + 127

// ActsFor is the activation quantization that weights of type t take.
func ActsFor(t dtype.DType) Acts {
	switch t {
	case dtype.Q8_0, dtype.Q4_0, dtype.Q5_0, dtype.Q5_1:
		return Acts16x32
	case dtype.Q4_K, dtype.Q5_K, dtype.Q6_K:
		return Acts16x256
	}
	return 0
}

// Block is the number of activations that share one scale.
func (a Acts) Block() int {
	if a == Acts16x256 {
		return kBlock
	}
	return 32
}

// RowBytes is the size of one quantized row of cols activations, a whole number of blocks.
func (a Acts) RowBytes(cols int) int {
	n := cols / a.Block()
	if a == Acts16x256 {
		return n * (2*kBlock + 4 + 4*16)
	}
	return n * (2*32 + 4 + 4)
}

// sumSpan is the number of consecutive values each of a's stored sums covers.
func (a Acts) sumSpan() int {
	if a == Acts16x256 {
		return 16
	}
	return 32
}

// String names the format ("i16x32", "i16x256").
func (a Acts) String() string {
	switch a {
	case Acts16x32:
		return "i16x32"
	case Acts16x256:
		return "i16x256"
	}
	return fmt.Sprintf("acts(%d)", uint8(a))
}

// QuantizeActs quantizes the len(x)/cols rows of x (row-major, cols a whole number of the
// format's blocks) into dst, RowBytes(cols) bytes per row. Per block, with amax = max|x|
// and L = 32639 (splitLimit):
//
//	d = amax/L, q = round-half-even(x·(L/amax)) (all zeros when amax is 0)
//
// in f32, and a NaN or infinity anywhere in the block makes d NaN, so that no output reading
// it is silently finite. Each row's quantization depends on that row alone, so a GEMM's
// rows quantize as their GEMVs do. It does not allocate.
func QuantizeActs(a Acts, dst []byte, x []float32, cols int) error {
	return QuantizeActsAt(a, dst, x, cols, 0, cols)
}

// QuantizeActsAt is QuantizeActs for rows of width values (whole blocks) of which each row
// of x fills columns [lead, lead+cols) and zeros the rest: the input of a row-parallel
// shard whose columns begin or end inside a block of its weights, which the rank holds
// whole (a zero activation takes no part in any sum). The blocks' scales come from the
// rank's own values.
func QuantizeActsAt(a Acts, dst []byte, x []float32, cols, lead, width int) error {
	if a != Acts16x32 && a != Acts16x256 {
		return fmt.Errorf("quant: quantize activations: unknown format %v", a)
	}
	bs := a.Block()
	if cols <= 0 || len(x)%cols != 0 || width%bs != 0 || lead < 0 || lead+cols > width {
		return fmt.Errorf("quant: quantize activations as %v: %d values in rows of %d at column %d of %d: want rows within whole %d-value blocks", a, len(x), cols, lead, width, bs)
	}
	rows, rb := len(x)/cols, a.RowBytes(width)
	if len(dst) < rows*rb {
		return fmt.Errorf("quant: quantize %d rows of %d activations as %v: %d bytes needed, have %d", rows, width, a, rows*rb, len(dst))
	}
	var block [kBlock]float32
	for r := range rows {
		row, out := x[r*cols:(r+1)*cols], dst[r*rb:(r+1)*rb]
		if lead == 0 && cols == width && quantRowAsm(a, out, row) {
			continue
		}
		quantRowGo(a, out, row, lead, width, &block)
	}
	return nil
}

// quantRowGo is QuantizeActsAt for one row in portable Go: block after block, the part of
// the row a block holds copied into block (zeros around it) and quantized.
func quantRowGo(a Acts, out []byte, row []float32, lead, width int, block *[kBlock]float32) {
	bs, cols := a.Block(), len(row)
	nb := width / bs
	qs, ds := out[:2*width], out[2*width:2*width+4*nb]
	var q [kBlock]int16
	for b := range nb {
		vals := block[:bs]
		clear(vals)
		lo, hi := max(b*bs, lead), min((b+1)*bs, lead+cols)
		if lo < hi {
			copy(vals[lo-b*bs:], row[lo-lead:hi-lead])
		}
		d := quantBlock16(q[:bs], vals, splitLimit)
		binary.LittleEndian.PutUint32(ds[4*b:], math.Float32bits(d))
		for i, v := range q[:bs] {
			lo := int8(v)
			qs[2*bs*b+i] = byte(lo)
			qs[2*bs*b+bs+i] = byte(int8((int32(v) - int32(lo)) / 256))
		}
		per := a.sumSpan()
		gs := out[2*width+4*nb:]
		for g := range bs / per {
			var sum int32
			for _, v := range q[per*g : per*(g+1)] {
				sum += int32(v)
			}
			binary.LittleEndian.PutUint32(gs[4*(bs/per*b+g):], uint32(sum))
		}
	}
}

// quantBlock16 quantizes one block of x into q, its largest magnitude to ±limit, and
// returns its scale.
func quantBlock16(q []int16, x []float32, limit float32) float32 {
	var amax float32
	finite := true
	for _, v := range x {
		amax = max(amax, absf(v))
		finite = finite && absf(v) <= math.MaxFloat32
	}
	if !finite {
		clear(q)
		return float32(math.NaN())
	}
	var id float32
	if amax != 0 {
		id = limit / amax
	}
	for i, v := range x {
		q[i] = int16(math.RoundToEven(float64(float32(v * id))))
	}
	return amax / limit
}
