package comm

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// ring is NCCL's shape: reduce-scatter then all-gather around the ring 0 → 1 → … → n-1 → 0,
// in place in each rank's staging buffer, which holds f32 for every dtype so that bf16
// partial sums never round before the end. The chunk is cut into n segments. Reduce-scatter
// step s: rank r adds segment (r-s-1) mod n of its left neighbour into its own, so after
// n-1 steps rank r holds the full sum of segment (r+1) mod n. All-gather step s: rank r
// copies segment (r-s) mod n from its left neighbour. A barrier follows every step; each
// rank moves 2(n-1)/n·S and waits 2(n-1) times.
func (cl *call) ring(b device.Block, off, count int) error {
	r, n := cl.r, cl.r.c.n
	own, left := r.peers[r.rank].f32, r.peers[(r.rank+n-1)%n].f32
	for p := range n {
		lo, hi := cl.sliceSpan(count, p, b)
		if cl.desc.t == dtype.F32 {
			copy(own[lo:hi], cl.in.Float32s()[off+lo:off+hi])
		} else {
			vec.Widen(cl.desc.t, own[lo:hi], cl.in.Uint16s()[off+lo:off+hi])
		}
	}
	if err := cl.barrier(b, "ring inputs staged"); err != nil {
		return err
	}
	for s := range n - 1 {
		lo, hi := cl.sliceSpan(count, (r.rank-s-1+2*n)%n, b)
		vec.AddF32(own[lo:hi], left[lo:hi])
		if err := cl.barrier(b, fmt.Sprintf("ring reduce-scatter step %d", s)); err != nil {
			return err
		}
	}
	for s := range n - 1 {
		lo, hi := cl.sliceSpan(count, (r.rank-s+n)%n, b)
		copy(own[lo:hi], left[lo:hi])
		if err := cl.barrier(b, fmt.Sprintf("ring all-gather step %d", s)); err != nil {
			return err
		}
	}
	for p := range n { // the last barrier let the right neighbour finish reading own
		lo, hi := cl.sliceSpan(count, p, b)
		if cl.desc.t == dtype.F32 {
			copy(cl.outF32(off+lo, hi-lo), own[lo:hi])
		} else {
			vec.Narrow(cl.desc.t, cl.outU16(off+lo, hi-lo), own[lo:hi])
		}
	}
	return nil
}
