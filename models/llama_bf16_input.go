package models

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/layers"
)

// Under LlamaOptions.BF16Dot, bf16 matrices multiply activations rounded to bf16
// (layers.LinearBF16DotRows): like a quantized input, the rounding runs once per input,
// before the linear layers that read it.

// allocBF16Inputs sizes, under BF16Dot, one buffer of MaxTokens rows of the widest input
// of the rank's bf16 matrices; its stride is the elements per token, so micro-batches
// never share elements.
func (rk *llamaRank) allocBF16Inputs() error {
	if !rk.m.opt.BF16Dot {
		return nil
	}
	widest := 0
	each := func(w layers.Matrix) {
		if w.DType == dtype.BF16 {
			widest = max(widest, w.Cols)
		}
	}
	for _, ly := range rk.layers {
		for _, w := range []layers.Matrix{ly.q.w, ly.k.w, ly.v.w, ly.o.w, ly.gate.w, ly.up.w, ly.down.w} {
			each(w)
		}
	}
	each(rk.head)
	if widest == 0 {
		return nil
	}
	b, err := rk.dev.Alloc(dtype.BF16, rk.m.opt.MaxTokens*widest)
	if err != nil {
		return err
	}
	rk.bufs = append(rk.bufs, b)
	rk.act.xb, rk.act.xbStride = b, widest
	return nil
}

// roundInput sets in.xb to x (rows t0.. of the step, cols values each) rounded to bf16 and
// returns the op that rounds it, when BF16Dot is on and one of ws is bf16; else nil.
func (rk *llamaRank) roundInput(s *device.Stream, name string, in *linearInput, cols, lead, t0 int, ws []layers.Matrix) func() error {
	if rk.act.xb == nil {
		return nil
	}
	for _, w := range ws {
		if w.DType != dtype.BF16 {
			continue
		}
		x, rows := in.x, in.rows
		if lead != 0 || w.Cols != cols {
			return func() error {
				return fmt.Errorf("models: %s: bf16 dot input of %d columns at %d, matrix of %d", name, cols, lead, w.Cols)
			}
		}
		stride := rk.act.xbStride
		buf := rk.act.xb.Uint16s()[t0*stride : t0*stride+rows*cols]
		in.xb = buf
		work := device.Work{Class: device.ClassElementwise, Bytes: int64(len(x)*4 + len(buf)*2)}
		return rk.grid(s, name+".bf16", rows, rows*cols, work, func(_ device.Block, r0, r1 int) error {
			return layers.RoundBF16(buf[r0*cols:r1*cols], x[r0*cols:r1*cols])
		})
	}
	return nil
}
