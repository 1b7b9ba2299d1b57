package comm

import (
	"slices"

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
// tree t's elements are packed in order (tree 0's first), and the block has four things to
// do: per tree, take the children's partial sums, add them to its input and send the
// result up; then take the parent's sums (the root has them), write them out and send them
// down. It does whichever is ready, as tree.go does, and waits only when none is: a rank
// that is a leaf in one tree sends that tree's input at once, and one tree's sums can come
// down while the other's still go up.
func (cl *call) treeOver(w wire, b device.Block, off, count int) error {
	r := cl.r
	if r.c.n == 1 {
		return cl.tree(b, off, count) // one rank: a copy
	}
	cl.enter(b)
	lo, hi := blockSpan(count, b)
	step := w.elems(r.c.slotWords)
	for x := lo; x < hi; x += step {
		if err := cl.treePiece(cl.nextPiece(w, b), b, off, x, min(x+step, hi)); err != nil {
			return err
		}
	}
	return cl.verify(b, false) // the sums hold every rank's input: every peer published its call
}

// treeStep is one of a piece's four steps: tree t, up (down = 0: reduce) or down (1:
// broadcast).
type treeStep struct{ t, down int }

var treeSteps = [4]treeStep{{0, 0}, {1, 0}, {0, 1}, {1, 1}}

// treePiece runs the piece of chunk elements [x, e) through both trees.
func (cl *call) treePiece(pc piece, b device.Block, off, x, e int) error {
	r := cl.r
	acc, kids := r.scratch[b.Index][0], [2][]float32{r.scratch[b.Index][1], r.scratch[b.Index][2]}
	var sums [2][]float32 // per tree, its elements of the piece, packed into acc
	at := 0
	for t := range 2 {
		m := 0
		treeRuns(off, x, e, t, func(a, z int) { m += z - a })
		sums[t], at = acc[at:at+m], at+m
	}
	// arrived reports whether the step's sources (the children's up slots, or the parent's
	// down slot) hold this piece's data, or a flag that receive must report: their last
	// element shows it.
	arrived := func(st treeStep) bool {
		node := r.c.dtree[st.t][r.rank]
		var slots [2]int
		k := 0
		if st.down == 1 && node.parent >= 0 {
			slots[0], k = treeDownSlot(st.t), 1
		}
		for c, ch := range node.child {
			if st.down == 0 && ch >= 0 {
				slots[k], k = treeUpSlot(st.t, c), k+1
			}
		}
		for _, i := range slots[:k] {
			f := pc.w.flagOf(cl.slotOf(pc, r.rank, b, i), len(sums[st.t])-1)
			if f != pc.flag && staleFlag(f, pc.flag) {
				return false
			}
		}
		return true
	}
	var done [2][2]bool // [tree][down]; a tree without elements in the piece has nothing to do
	for t := range 2 {
		done[t] = [2]bool{len(sums[t]) == 0, len(sums[t]) == 0}
	}
	runnable := func(st treeStep) bool {
		return !done[st.t][st.down] && (st.down == 0 || done[st.t][0]) && arrived(st)
	}
	anyRunnable := func() bool {
		for _, st := range treeSteps {
			if runnable(st) {
				return true
			}
		}
		return false
	}
	for !(done[0][0] && done[0][1] && done[1][0] && done[1][1]) {
		if !anyRunnable() {
			if err := cl.wait(b, treeWhat, anyRunnable, nil); err != nil {
				return cl.waitError(b, treeWhat, cl.notEntered(b, cl.treeNeighbours()...), err)
			}
		}
		for _, st := range treeSteps {
			if !runnable(st) {
				continue
			}
			var err error
			if st.down == 1 {
				err = cl.treeDown(pc, b, off, x, e, st.t, sums[st.t])
			} else {
				err = cl.treeUp(pc, b, off, x, e, st.t, sums[st.t], kids)
			}
			if err != nil {
				return err
			}
			done[st.t][st.down] = true
		}
	}
	return nil
}

// treeUp adds the children's partial sums of tree t to the block's input (packed in sum)
// and sends the result to the parent.
func (cl *call) treeUp(pc piece, b device.Block, off, x, e, t int, sum []float32, kids [2][]float32) error {
	r := cl.r
	node := r.c.dtree[t][r.rank]
	at := 0
	treeRuns(off, x, e, t, func(a, z int) { cl.inputF32To(sum[at:at+z-a], off+a); at += z - a })
	for k, ch := range node.child {
		if ch < 0 {
			continue
		}
		got := kids[k][:len(sum)]
		if err := cl.receive(pc, ch, b, treeUpSlot(t, k), got, treeUpWhat); err != nil {
			return err
		}
		if err := cl.sameCall(b, ch, treeUpWhat); err != nil { // a child waits for these sums
			return err
		}
		vec.AddF32(sum, got)
	}
	if p := node.parent; p >= 0 {
		k := 0
		if r.c.dtree[t][p].child[0] != r.rank {
			k = 1
		}
		cl.send(pc, p, b, treeUpSlot(t, k), sum)
	}
	return nil
}

// treeDown takes the parent's sums of tree t into sum (the root has them), writes them
// out and sends them to the children.
func (cl *call) treeDown(pc piece, b device.Block, off, x, e, t int, sum []float32) error {
	node := cl.r.c.dtree[t][cl.r.rank]
	if p := node.parent; p >= 0 {
		if err := cl.receive(pc, p, b, treeDownSlot(t), sum, treeDownWhat); err != nil {
			return err
		}
	}
	at := 0
	treeRuns(off, x, e, t, func(a, z int) { cl.treeOut(off+a, sum[at:at+z-a]); at += z - a })
	for _, ch := range node.child {
		if ch >= 0 {
			cl.send(pc, ch, b, treeDownSlot(t), sum)
		}
	}
	return nil
}

// treeNeighbours lists the ranks this rank exchanges with in either tree.
func (cl *call) treeNeighbours() []int {
	var ranks []int
	for t := range 2 {
		node := cl.r.c.dtree[t][cl.r.rank]
		for _, p := range [3]int{node.parent, node.child[0], node.child[1]} {
			if p >= 0 && !slices.Contains(ranks, p) {
				ranks = append(ranks, p)
			}
		}
	}
	slices.Sort(ranks)
	return ranks
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
