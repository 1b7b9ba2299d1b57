package fused

import (
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/vec"
)

// unfused is the reference and fallback: the all-reduce of partial into out (comm's
// choice of algorithm), then a second kernel that adds the residual and normalizes each
// row: two launches and one more pass over the rows than the fused variants.
func unfused(r *comm.Rank, s *device.Stream, partial, residual, weight, out *device.Buffer, sh Shape) error {
	count := sh.Tokens * sh.Hidden
	if count == 0 {
		return nil
	}
	if err := r.AllReduce(s, partial, out, count); err != nil {
		return err
	}
	h := sh.Hidden
	res, w, o := residual.Float32s(), weight.Float32s()[:h], out.Float32s()
	return s.Launch(device.Kernel{
		Name: "residual_rmsnorm",
		// reads the sum, the residual and the weight; writes the residual and the output
		Work: device.Work{Class: device.ClassNorm, Bytes: int64(4*count*4 + h*4)},
		Grid: max(1, min(r.Device().NumSMs(), (count+blockElems-1)/blockElems, sh.Tokens)),
		Block: func(b device.Block) error {
			r0, r1 := blockRows(sh.Tokens, b)
			for t := r0; t < r1; t++ {
				row := o[t*h : (t+1)*h]
				vec.AddRMSNorm(row, res[t*h:(t+1)*h], row, w, sh.Eps)
			}
			return nil
		},
	})
}
