package fused

import (
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/vec"
)

// twoShot: every rank stages its block's rows; barrier; rank p sums the part of them it
// owns (whole rows, or a column slice of every row when the block has fewer rows than
// ranks) over all ranks into its tmp buffer; barrier; every rank gathers each row from the
// owners' tmp buffers into out and adds the residual and normalizes in the same pass.
// As with the plain two-shot, no trailing barrier is needed.
func (f *fusedCall) twoShot(k *comm.CallCtx, b device.Block, off, n int) error {
	h, ranks := f.shape.Hidden, k.Size()
	r0, r1 := blockRows(n/h, b)
	k.Stage(off, r0*h, r1*h)
	if err := k.Barrier(b, "fused two-shot inputs staged"); err != nil {
		return err
	}
	var srcs [device.MaxNodeDevices][]float32
	ownTmp := k.Tmp(k.Rank())
	ownedBy(k.Rank(), ranks, r0, r1, h).spans(func(lo, hi int) {
		for p := range ranks {
			srcs[p] = k.Input(p, off, lo, hi)
		}
		vec.SumF32(ownTmp[lo:hi], srcs[:ranks])
	})
	if err := k.Barrier(b, "fused two-shot parts reduced"); err != nil {
		return err
	}
	base := off / h // chunk row 0 as a global row
	for p := range ranks {
		tmp := k.Tmp(p)
		ownedBy(p, ranks, r0, r1, h).spans(func(lo, hi int) {
			copy(f.out[off+lo:off+hi], tmp[lo:hi])
		})
	}
	for t := r0; t < r1; t++ {
		f.norm(base + t)
	}
	return nil
}
