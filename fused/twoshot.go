package fused

import (
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
)

// twoShot: every rank stages its block's rows; barrier; rank p sums the part of them it
// owns (whole rows, or a column slice of every row when the block has fewer rows than
// ranks) over all ranks into its tmp buffer; barrier; every rank gathers each row from the
// owners' tmp buffers into out and adds the residual and normalizes in the same pass.
// As with the plain two-shot, no trailing barrier is needed. On a low-precision wire the
// owners' sums are encoded again for the gather (comm.CallCtx.ReduceOwn), and column
// slices are cut at the wire's blocks of scale.
func (f *fusedCall) twoShot(k *comm.CallCtx, b device.Block, off, n int) error {
	h, ranks, g := f.shape.Hidden, k.Size(), k.WireBlock()
	r0, r1 := blockRows(n/h, b)
	k.Stage(off, r0*h, r1*h)
	if err := k.Barrier(b, "fused two-shot inputs staged"); err != nil {
		return err
	}
	ownedBy(k.Rank(), ranks, r0, r1, h, g).spans(func(lo, hi int) { k.ReduceOwn(off, lo, hi) })
	if err := k.Barrier(b, "fused two-shot parts reduced"); err != nil {
		return err
	}
	base := off / h // chunk row 0 as a global row
	for p := range ranks {
		ownedBy(p, ranks, r0, r1, h, g).spans(func(lo, hi int) { k.Gather(p, off, lo, hi) })
	}
	for t := r0; t < r1; t++ {
		f.norm(base + t)
	}
	return nil
}
