package fused

import (
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// nvlsTile is how many elements one multimem load-reduce / store pair moves.
const nvlsTile = 512

// nvls: every rank stages its block's rows; barrier; rank p load-reduces the part it owns
// through the multicast object and multicast-stores the sums into every rank's staging
// buffer; barrier; every rank copies its block's reduced rows out of its own staging
// buffer, adding the residual and normalizing on the way.
func (f *fusedCall) nvls(k *comm.CallCtx, b device.Block, off, n int) error {
	h, mc := f.shape.Hidden, k.Multicast()
	r0, r1 := blockRows(n/h, b)
	k.Stage(off, r0*h, r1*h)
	if err := k.Barrier(b, "fused nvls inputs staged"); err != nil {
		return err
	}
	var sum [nvlsTile]float32
	var err error
	ownedBy(k.Rank(), k.Size(), r0, r1, h, 1).spans(func(lo, hi int) {
		for x := lo; x < hi && err == nil; x += nvlsTile {
			s := sum[:min(nvlsTile, hi-x)]
			if err = mc.LoadReduce(dtype.F32, s, x); err == nil {
				err = mc.Store(dtype.F32, x, s)
			}
		}
	})
	if err != nil {
		return err
	}
	if err := k.Barrier(b, "fused nvls parts reduced"); err != nil {
		return err
	}
	own := k.Staging(k.Rank())
	base := off / h
	for t := r0; t < r1; t++ {
		copy(f.out[(base+t)*h:(base+t+1)*h], own[t*h:(t+1)*h])
		f.norm(base + t)
	}
	return nil
}
