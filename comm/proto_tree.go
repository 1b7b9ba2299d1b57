package comm

import (
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/vec"
)

// The tree's slots in a piece: per tree, the partial sums of the parent's two children,
// then per tree the sums from the parent.
const treeSlots = 6

func treeUpSlot(t, child int) int { return 2*t + child }
func treeDownSlot(t int) int      { return 4 + t }

const (
	treeUpWhat   = "tree partial sums from a child"
	treeDownWhat = "tree sums from the parent"
)

// treeOver is the tree all-reduce (tree.go) under the LL or LL128 protocol w: the same
// trees, the same element-to-tree map and the same order of additions (own input, then the
// children's partial sums, smaller child first), so the same bits as under Simple; but each
// partial sum goes straight into the parent's protocol buffer and each sum into the
// children's, flags inside the data.
//
// The block's share of the chunk goes through in pieces of what a slot holds. In a piece,
// tree t's elements are packed in order (tree 0's first): for each tree the rank waits for
// its children's partial sums, adds them to its input and sends the result up; then for
// each tree it waits for the parent's sums (the root has them), writes them out and sends
// them down. Going up both trees before coming down either lets a rank that is a leaf in
// one tree send that tree's input at once while the other tree's sums still come up.
func (cl *call) treeOver(w wire, b device.Block, off, count int) error {
	r := cl.r
	if r.c.n == 1 {
		return cl.tree(b, off, count) // one rank: a copy
	}
	cl.enter(b)
	lo, hi := blockSpan(count, b)
	acc, kids := r.scratch[b.Index][0], [2][]float32{r.scratch[b.Index][1], r.scratch[b.Index][2]}
	for x := lo; x < hi; x += w.elems() {
		e := min(x+w.elems(), hi)
		pc := cl.nextPiece(w, b)
		var sums [2][]float32 // per tree, its elements of the piece, packed into acc
		at := 0
		for t := range 2 {
			m := 0
			treeRuns(off, x, e, t, func(a, z int) { m += z - a })
			sums[t], at = acc[at:at+m], at+m
		}
		for t := range 2 {
			if len(sums[t]) == 0 {
				continue
			}
			node := r.c.dtree[t][r.rank]
			at := 0
			treeRuns(off, x, e, t, func(a, z int) { cl.inputF32To(sums[t][at:at+z-a], off+a); at += z - a })
			for k, ch := range node.child {
				if ch < 0 {
					continue
				}
				got := kids[k][:len(sums[t])]
				if err := cl.receive(pc, ch, b, treeUpSlot(t, k), got, treeUpWhat); err != nil {
					return err
				}
				if err := cl.sameCall(b, ch, treeUpWhat); err != nil { // a child waits for these sums
					return err
				}
				vec.AddF32(sums[t], got)
			}
			if p := node.parent; p >= 0 {
				k := 0
				if r.c.dtree[t][p].child[0] != r.rank {
					k = 1
				}
				cl.send(pc, p, b, treeUpSlot(t, k), sums[t])
			}
		}
		for t := range 2 {
			if len(sums[t]) == 0 {
				continue
			}
			node := r.c.dtree[t][r.rank]
			if p := node.parent; p >= 0 {
				if err := cl.receive(pc, p, b, treeDownSlot(t), sums[t], treeDownWhat); err != nil {
					return err
				}
			}
			at := 0
			treeRuns(off, x, e, t, func(a, z int) { cl.outputFromF32(off+a, sums[t][at:at+z-a]); at += z - a })
			for _, ch := range node.child {
				if ch >= 0 {
					cl.send(pc, ch, b, treeDownSlot(t), sums[t])
				}
			}
		}
	}
	return cl.verify(b, false) // the sums hold every rank's input: every peer published its call
}

// treeRuns calls fn for every run [a, z) of chunk elements in [x, e) that tree t carries,
// in order; the chunk starts at message element off (see treeGrain).
func treeRuns(off, x, e, t int, fn func(a, z int)) {
	for x < e {
		g := (off + x) / treeGrain
		end := min((g+1)*treeGrain-off, e)
		if g%2 == t {
			fn(x, end)
		}
		x = end
	}
}
