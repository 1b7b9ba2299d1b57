package models

import (
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/quant"
)

// Quantized weights multiply 16-bit integer activations (layers.LinearQuantRows): before
// the linear layers that read an input, one kernel per activation format they need
// quantizes it, so Q, K and V (or gate and up) share one quantization of h.

// linearInput is the input of one or more linear layers: rows [t0, t1) of the step's
// tokens, in f32 and quantized for each activation format its layers read.
type linearInput struct {
	x    []float32
	rows int
	q    [quant.MaxActs + 1][]byte
	xb   []uint16 // x rounded to bf16, for bf16 matrices under BF16Dot
}

// allocQuantInputs sizes one buffer per activation format that the rank's quantized
// matrices read, MaxTokens rows of the widest input. Its stride is the bytes per token: the
// input of tokens [t0, t1) starts at byte t0·stride (its rows packed from there), so
// micro-batches never share bytes.
func (rk *llamaRank) allocQuantInputs() error {
	var widest [quant.MaxActs + 1]int
	each := func(w layers.Matrix) {
		if f := quant.ActsFor(w.DType); f != 0 {
			widest[f] = max(widest[f], f.RowBytes(w.Cols))
		}
	}
	for _, ly := range rk.layers {
		for _, w := range []layers.Matrix{ly.q.w, ly.k.w, ly.v.w, ly.o.w, ly.gate.w, ly.up.w, ly.down.w} {
			each(w)
		}
	}
	each(rk.head)
	if err := rk.allocBF16Inputs(); err != nil {
		return err
	}
	for f, bytes := range widest {
		if bytes == 0 {
			continue
		}
		b, err := rk.dev.Alloc(dtype.F32, (rk.m.opt.MaxTokens*bytes+3)/4) // raw bytes
		if err != nil {
			return err
		}
		rk.bufs = append(rk.bufs, b)
		rk.act.xq[f], rk.act.xqStride[f] = b, bytes
	}
	return nil
}

// quantizeInput returns x (rows t0.. of the step, cols values each) as the input of the
// matrices ws, and the op that quantizes it once per activation format they read. lead is
// where x's columns begin in the matrices' (0 but for a row-parallel shard that holds whole
// blocks beyond its columns, see loadMatrix).
func (rk *llamaRank) quantizeInput(s *device.Stream, name string, x []float32, cols, lead, t0 int, ws ...layers.Matrix) (linearInput, func() error) {
	rows := len(x) / cols
	in := linearInput{x: x, rows: rows}
	var ops []func() error
	for _, w := range ws {
		f := quant.ActsFor(w.DType)
		if f == 0 || in.q[f] != nil {
			continue
		}
		width, stride, rb := w.Cols, rk.act.xqStride[f], f.RowBytes(w.Cols)
		buf := rk.act.xq[f].Bytes8()[t0*stride : t0*stride+rows*rb]
		in.q[f] = buf
		work := device.Work{Class: device.ClassElementwise, Bytes: int64(len(x)*4 + rows*rb)}
		ops = append(ops, rk.grid(s, name+"."+f.String(), rows, rows*width, work, func(_ device.Block, r0, r1 int) error {
			return quant.QuantizeActsAt(f, buf[r0*rb:r1*rb], x[r0*cols:r1*cols], cols, lead, width)
		}))
	}
	if op := rk.roundInput(s, name, &in, cols, lead, t0, ws); op != nil {
		ops = append(ops, op)
	}
	return in, func() error { return run(ops) }
}
