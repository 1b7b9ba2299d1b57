package stepwire

import (
	"encoding/binary"
	"fmt"

	"github.com/tpslice/tpslice/layers"
)

// samplerBytes is the least a sampler takes: its fixed fields and the count of its
// adjustments.
const samplerBytes = 4 + 1 + 8 + 8 + 4 + 4

// adjustBytes is one logit adjustment's size.
const adjustBytes = 4 + 4 + 1 + 4

// appendSampler appends one sampled row's sampler: temperature f32 | flags u8 (1: draw,
// 2: terms) | seed, pos u64 | repetition f32 | adjusts u32, per adjust: token i32, bias
// f32, flags u8 (1: mask, 2: repeat), sub f32.
func appendSampler(b []byte, sp layers.RowSampler) []byte {
	flags := byte(0)
	if sp.Draw {
		flags |= samplerDraw
	}
	if sp.Terms {
		flags |= samplerTerms
	}
	b = append(appendF32(b, sp.Temperature), flags)
	b = binary.LittleEndian.AppendUint64(b, sp.Seed)
	b = binary.LittleEndian.AppendUint64(b, sp.Pos)
	b = appendU32(appendF32(b, sp.RepetitionPenalty), len(sp.Adjust))
	for _, a := range sp.Adjust {
		af := byte(0)
		if a.Mask {
			af |= adjustMask
		}
		if a.Repeat {
			af |= adjustRepeat
		}
		b = append(appendF32(binary.LittleEndian.AppendUint32(b, uint32(a.ID)), a.Bias), af)
		b = appendF32(b, a.Sub)
	}
	return b
}

// sampler reads what appendSampler wrote, for sampled row i.
func (r *reader) sampler(i int) layers.RowSampler {
	var sp layers.RowSampler
	sp.Temperature = r.f32("temperature")
	flags := r.u8("sampler flags")
	if r.err == nil && flags&^(samplerDraw|samplerTerms) != 0 {
		r.err = fmt.Errorf("row %d's sampler: unknown flags %#x", i, flags)
	}
	sp.Draw, sp.Terms = flags&samplerDraw != 0, flags&samplerTerms != 0
	sp.Seed, sp.Pos = r.u64("seed"), r.u64("draw position")
	sp.RepetitionPenalty = r.f32("repetition penalty")
	n := r.count(fmt.Sprintf("row %d's logit adjustments", i), adjustBytes)
	if n > 0 {
		sp.Adjust = make([]layers.LogitAdjust, n)
	}
	for j := range n {
		a := &sp.Adjust[j]
		a.ID, a.Bias = int32(r.u32("adjusted token")), r.f32("bias")
		af := r.u8("adjustment flags")
		if r.err == nil && af&^(adjustMask|adjustRepeat) != 0 {
			r.err = fmt.Errorf("row %d's adjustment %d: unknown flags %#x", i, j, af)
		}
		a.Mask, a.Repeat, a.Sub = af&adjustMask != 0, af&adjustRepeat != 0, r.f32("subtrahend")
	}
	return sp
}
