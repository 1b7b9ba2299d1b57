package fused

import (
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
)

// tree: the block's rows go through comm's tree all-reduce (each element on the tree the
// plain all-reduce gives it, so the sums are its bits) in slices of whole rows; the sums
// come down into out, and once both trees have brought a slice down its rows get the
// residual add and the norm, while later slices are still on their way.
func (f *fusedCall) tree(k *comm.CallCtx, b device.Block, off, n int) error {
	h := f.shape.Hidden
	r0, r1 := blockRows(n/h, b)
	return k.Tree(b, off, r0*h, r1*h, h, f.treeOut, f.treeNorm)
}

// treeOut copies the sums of elements [x, x+len(sum)) into out.
func (f *fusedCall) treeOut(x int, sum []float32) { copy(f.out[x:x+len(sum)], sum) }

// treeNorm finishes the rows of elements [x0, x1), whole rows whose sums are in out.
func (f *fusedCall) treeNorm(x0, x1 int) {
	h := f.shape.Hidden
	for t := x0 / h; t < x1/h; t++ {
		f.norm(t)
	}
}
