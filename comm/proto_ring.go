package comm

import (
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

const (
	ringRSWhat = "ring reduce-scatter, from the left neighbour"
	ringAGWhat = "ring all-gather, from the left neighbour"
)

// ringOver is the ring all-reduce (ring.go) under the LL or LL128 protocol w: the same
// segments and the same additions, so the same bits as under Simple, but every step goes
// straight from a rank to its right neighbour's protocol buffer, flags inside the data, and
// the neighbour starts on it as soon as it arrives: no barrier, no fence, no staging copy.
//
// Segment p of the chunk is what sliceSpan gives, as under Simple (which rank starts a
// segment's sum decides its rounding). The block's share of every segment goes round in
// pieces of what a slot holds, all 2(n-1) steps of a piece before the next. Reduce-scatter
// step s: rank r receives segment (r-1-s) mod n from the left, adds its own input (own +
// left, as ring.go's AddF32) and passes the sum on; after step n-2 it holds the sum of
// segment r+1, its output, which the all-gather passes round the ring.
func (cl *call) ringOver(w wire, b device.Block, off, count int) error {
	r, n := cl.r, cl.r.c.n
	if n == 1 {
		return cl.tree(b, off, count) // one rank: a copy
	}
	cl.enter(b)
	left, right := (r.rank+n-1)%n, (r.rank+1)%n
	var lo, hi [device.MaxNodeDevices]int
	longest := 0
	for p := range n {
		lo[p], hi[p] = cl.sliceSpan(count, p, b)
		longest = max(longest, hi[p]-lo[p])
	}
	acc, recv := r.scratch[b.Index][0], r.scratch[b.Index][1]
	step := w.elems(r.c.slotWords)
	for x := 0; x < longest; x += step {
		pc := cl.nextPiece(w, b)
		span := func(seg int) (a, m int) {
			a = min(lo[seg]+x, hi[seg])
			return a, min(a+step, hi[seg]) - a
		}
		a, m := span(r.rank)
		cl.inputF32To(acc[:m], off+a)
		cl.send(pc, right, b, 0, acc[:m])
		for s := range n - 1 {
			a, m := span((r.rank - 1 - s + n) % n)
			if err := cl.receive(pc, left, b, s, recv[:m], ringRSWhat); err != nil {
				return err
			}
			if s == 0 && m > 0 { // the left neighbour cannot leave the call before this rank's sums
				if err := cl.sameCall(b, left, ringRSWhat); err != nil {
					return err
				}
			}
			cl.inputF32To(acc[:m], off+a)
			vec.AddF32(acc[:m], recv[:m])
			if s == n-2 {
				cl.treeOut(off+a, acc[:m])
			}
			cl.send(pc, right, b, s+1, acc[:m]) // the last is the all-gather's first step
		}
		for j := range n - 1 {
			a, m := span((r.rank - j + n) % n)
			if err := cl.receive(pc, left, b, n-1+j, recv[:m], ringAGWhat); err != nil {
				return err
			}
			cl.treeOut(off+a, recv[:m])
			if j < n-2 {
				cl.send(pc, right, b, n+j, recv[:m])
			}
		}
	}
	return cl.verify(b, false) // the sums hold every rank's input: every peer published its call
}

// inputF32To copies input elements [x, x+len(dst)) into dst as f32.
func (cl *call) inputF32To(dst []float32, x int) {
	if cl.desc.t == dtype.F32 {
		copy(dst, cl.in.Float32s()[x:x+len(dst)])
	} else {
		vec.Widen(cl.desc.t, dst, cl.in.Uint16s()[x:x+len(dst)])
	}
}
