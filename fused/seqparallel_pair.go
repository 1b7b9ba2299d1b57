package fused

import (
	"fmt"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/vec"
)

// seqParallelPair is what SeqParallel fuses, as separate collectives and kernels, the
// reference it is held to bit for bit and the baseline it is measured against: comm's
// reduce-scatter of partial by rows into rank r's slice of out, a residual + RMSNorm
// kernel on that slice and rank r's slice of residual, then two all-gathers in place
// (the normalized rows into out, the new residual rows into residual):
//
//	m = Tokens/n; rank r's rows [r·m, (r+1)·m):
//	out[t]      = Σ_ranks partial[t]            (comm's reduce-scatter order)
//	residual[t] += out[t]; out[t] = residual[t] / rms(residual[t]) · weight
//	all-gather out, all-gather residual
//
// Every rank gets the same m rows, so n must divide Tokens (Megatron pads the sequence;
// SeqParallel itself needs no padding).
func seqParallelPair(r *comm.Rank, s *device.Stream, partial, residual, weight, out *device.Buffer, sh Shape) error {
	n, h := r.Size(), sh.Hidden
	if err := check(r, partial, residual, weight, out, sh); err != nil {
		return err
	}
	if sh.Tokens%n != 0 {
		return fmt.Errorf("fused: rank %d reduce-scatter + rmsnorm + all-gather of %d×%d: %d tokens do not split evenly over %d ranks; pad them", r.Rank(), sh.Tokens, h, sh.Tokens, n)
	}
	m := sh.Tokens / n
	if m == 0 {
		return nil
	}
	outR, err := out.View(r.Rank()*m*h, m*h)
	if err != nil {
		return err
	}
	resR, err := residual.View(r.Rank()*m*h, m*h)
	if err != nil {
		return err
	}
	if err := r.ReduceScatter(s, partial, outR, m*h); err != nil {
		return err
	}
	o, res, w := outR.Float32s(), resR.Float32s(), weight.Float32s()[:h]
	err = s.Launch(device.Kernel{
		Name: "residual_rmsnorm",
		// reads the sum, the residual and the weight; writes the residual and the output
		Work: device.Work{Class: device.ClassNorm, Bytes: int64(4*m*h*4 + h*4)},
		Grid: max(1, min(r.Device().NumSMs(), (m*h+blockElems-1)/blockElems, m)),
		Block: func(b device.Block) error {
			r0, r1 := blockRows(m, b)
			for t := r0; t < r1; t++ {
				row := o[t*h : (t+1)*h]
				vec.AddRMSNorm(row, res[t*h:(t+1)*h], row, w, sh.Eps)
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	if err := r.AllGather(s, outR, out, m*h); err != nil {
		return err
	}
	return r.AllGather(s, resR, residual, m*h)
}
