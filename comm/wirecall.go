package comm

import (
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// How one-shot and two-shot run a low-precision wire (Wire). Each rank encodes its share
// of the chunk into its staging buffer; readers decode every rank's share and sum it in
// f32 in rank order (vec.Sum16ToF32, vec.SumE4M3), rounding once to the output's dtype.
// Two-shot's owner encodes its reduced slice again for the gather, so its result is the
// wire-rounded sum (one more rounding than one-shot's) — the same bits on every rank,
// because the owner gathers its own slice from its encoded copy too.
//
// On the fp8 wire a scale covers a block of vec.E4M3Block elements counted from the
// chunk's start, and one kernel block must write a whole block (it computes its amax):
// so every span a kernel block stages or reduces starts at a multiple of the block.

// wireTile is the elements a kernel block decodes or encodes at a time through its stack.
const wireTile = 1024

// granule is what a call's spans are multiples of: 16 elements (whole cache lines of f32)
// or, on the fp8 wire, whole blocks of scale.
func (cl *call) granule() int {
	if cl.wire == WireFP8 {
		return vec.E4M3Block
	}
	return 16
}

// span is block b's share [lo, hi) of a chunk of n elements, in whole granules but for the
// end: blockSpan's split, rounded to the call's granule.
func (cl *call) span(n int, b device.Block) (lo, hi int) {
	g := cl.granule()
	return splitAligned(n, b.Grid, b.Index, g), splitAligned(n, b.Grid, b.Index+1, g)
}

// stageWire encodes input elements [off+lo, off+hi) into the rank's staging buffer at
// [lo, hi) in the call's wire format.
func (cl *call) stageWire(off, lo, hi int) {
	own := &cl.r.peers[cl.r.rank]
	if cl.wire == WireBF16 { // f32 inputs only (callWire)
		vec.Narrow(dtype.BF16, own.u16[lo:hi], cl.in.Float32s()[off+lo:off+hi])
		return
	}
	if cl.desc.t == dtype.F32 {
		vec.QuantizeE4M3(own.codes[lo:hi], own.scales[lo/vec.E4M3Block:], cl.in.Float32s()[off+lo:off+hi])
		return
	}
	var wide [wireTile]float32
	in := cl.in.Uint16s()
	for t := lo; t < hi; t += wireTile {
		e := min(hi, t+wireTile)
		vec.Widen(cl.desc.t, wide[:e-t], in[off+t:off+e])
		vec.QuantizeE4M3(own.codes[t:e], own.scales[t/vec.E4M3Block:], wide[:e-t])
	}
}

// sumWire is sumInputs on the call's wire: elements [lo, hi) of every rank's staged chunk,
// decoded and summed in f32 in rank order, into dst from element at (rounded once for a
// 16-bit dtype).
func (cl *call) sumWire(lo, hi, at int, dstF32 []float32, dstU16 []uint16) {
	n := cl.r.c.n
	if cl.wire == WireBF16 {
		var srcs [device.MaxNodeDevices][]uint16
		for p := range n {
			srcs[p] = cl.r.peers[p].u16[lo:hi]
		}
		vec.Sum16ToF32(dtype.BF16, dstF32[at:at+hi-lo], srcs[:n])
		return
	}
	if cl.desc.t == dtype.F32 {
		cl.sumFP8(dstF32[at:at+hi-lo], lo)
		return
	}
	var acc [wireTile]float32
	for t := lo; t < hi; t += wireTile {
		e := min(hi, t+wireTile)
		cl.sumFP8(acc[:e-t], t)
		vec.Narrow(cl.desc.t, dstU16[at+t-lo:at+e-lo], acc[:e-t])
	}
}

// sumFP8 decodes and sums, in rank order, len(dst) fp8 elements from lo of every rank's
// staged chunk into dst.
func (cl *call) sumFP8(dst []float32, lo int) {
	n := cl.r.c.n
	var codes [device.MaxNodeDevices][]uint8
	var scales [device.MaxNodeDevices][]float32
	for p := range n {
		codes[p], scales[p] = cl.r.peers[p].codes[lo:lo+len(dst)], cl.r.peers[p].scales[lo/vec.E4M3Block:]
	}
	vec.SumE4M3(dst, codes[:n], scales[:n])
}

// reduceOwn is two-shot's reduce step: elements [lo, hi) of the chunk at off summed over
// every rank in rank order into the rank's tmp buffer at [lo, hi), in the call's wire
// format (the fp8 wire's sum encoded again, in tiles of whole blocks).
func (cl *call) reduceOwn(off, lo, hi int) {
	own := &cl.r.peers[cl.r.rank]
	switch cl.wire {
	case WireExact:
		cl.sumInputs(off, lo, hi, lo, own.tmpF32, own.tmpU16)
	case WireBF16:
		var srcs [device.MaxNodeDevices][]uint16
		for p := range cl.r.c.n {
			srcs[p] = cl.r.peers[p].u16[lo:hi]
		}
		vec.Sum16(dtype.BF16, own.tmpU16[lo:hi], srcs[:cl.r.c.n])
	case WireFP8:
		var acc [wireTile]float32
		for t := lo; t < hi; t += wireTile {
			e := min(hi, t+wireTile)
			cl.sumFP8(acc[:e-t], t)
			vec.QuantizeE4M3(own.tmpCodes[t:e], own.tmpScales[t/vec.E4M3Block:], acc[:e-t])
		}
	}
}

// gather is two-shot's gather step: rank p's reduced elements [lo, hi), from its tmp
// buffer in the call's wire format, into the output at off+lo.
func (cl *call) gather(p, off, lo, hi int) {
	src := &cl.r.peers[p]
	switch {
	case cl.wire == WireExact && cl.desc.t == dtype.F32:
		copy(cl.outF32(off+lo, hi-lo), src.tmpF32[lo:hi])
	case cl.wire == WireExact:
		copy(cl.outU16(off+lo, hi-lo), src.tmpU16[lo:hi])
	case cl.wire == WireBF16:
		vec.Widen(dtype.BF16, cl.outF32(off+lo, hi-lo), src.tmpU16[lo:hi])
	case cl.desc.t == dtype.F32:
		vec.SumE4M3(cl.outF32(off+lo, hi-lo), [][]uint8{src.tmpCodes[lo:hi]}, [][]float32{src.tmpScales[lo/vec.E4M3Block:]})
	default:
		var wide [wireTile]float32
		for t := lo; t < hi; t += wireTile {
			e := min(hi, t+wireTile)
			vec.SumE4M3(wide[:e-t], [][]uint8{src.tmpCodes[t:e]}, [][]float32{src.tmpScales[t/vec.E4M3Block:]})
			vec.Narrow(cl.desc.t, cl.outU16(off+t, e-t), wide[:e-t])
		}
	}
}
