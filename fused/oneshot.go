package fused

import (
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
)

// oneShot: every rank stages its rows of the partial output; barrier; every rank sums each
// of its block's rows over all ranks (rank order) straight into out, then adds the residual
// and normalizes in the same pass over the row; barrier before the staging buffer is reused.
// On a low-precision wire the rows are staged encoded and decoded as they are summed.
func (f *fusedCall) oneShot(k *comm.CallCtx, b device.Block, off, n int) error {
	h := f.shape.Hidden
	r0, r1 := blockRows(n/h, b)
	k.Stage(off, r0*h, r1*h)
	if err := k.Barrier(b, "fused one-shot inputs staged"); err != nil {
		return err
	}
	for t := r0; t < r1; t++ {
		g := off/h + t
		k.SumInputs(f.out[g*h:(g+1)*h], off, t*h, (t+1)*h)
		f.norm(g)
	}
	return k.Barrier(b, "fused one-shot inputs read")
}
