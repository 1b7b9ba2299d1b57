package comm

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// The tree all-reduce cuts messages twice: element x of a message belongs to tree
// (x / treeGrain) mod 2, so each tree carries half of any message longer than one grain,
// and the same element always takes the same tree (whatever the chunking, fused or not);
// a block's share of a chunk is pipelined through the trees in slices of treeSlice elements.
const (
	treeGrain = 512
	treeSlice = 32 << 10
)

// The tree flags of block b live in one cache line of each rank's signal buffer, after the
// barriers' flags, and only their owner writes them: the sequence number (+1) of the call
// the block last entered, then per tree the parts it has reduced (up) and broadcast (down)
// so far, as epochs that count from the communicator's start.
const (
	treeFlagBase = 2 * MaxBlocks * slotStride
	treeEntered  = 0
)

func treeUp(t int) int   { return 1 + 2*t }
func treeDown(t int) int { return 2 + 2*t }

// tree is NCCL's double binary tree all-reduce (see buildDoubleTree): each tree reduces
// its half of the message up to its root, then broadcasts the sums back down, in slices,
// so that a slice goes down while the next ones still come up. Partial sums live in f32 in
// each rank's staging buffer, so bf16 rounds once, at the end.
//
// Summation order: for an element carried by tree t, each rank sums its own input, then its
// children's partial sums, smaller child rank first, and the root's sum is the result. With
// n = 8, tree 0 (7 → 3 → {1 → {0, 2}, 5 → {4, 6}}) gives in7 + (((in3 + ((in1 + in0) + in2))
// + ((in5 + in4) + in6))). That is another rounding than the rank order of the other
// algorithms: results are within the same tolerance of the exact sum, not bitwise equal to
// theirs. Every rank gets the root's bits (the broadcast copies them), and the order depends
// only on n and the element's index, so repeated calls give the same bits.
//
// Synchronisation is point to point: a rank waits for its children's up flags of a slice
// before summing it, and for its parent's down flag before copying the slice's sums. Buffer
// reuse needs no barrier: a block leaves a chunk once its children's down flags say they
// have taken all its sums (its parent had read its partial sums before sending its own
// down), so the next chunk or call, of any algorithm, may overwrite its staging buffer, even
// where an element's tree changes place between chunks. On one rank the tree is a copy.
func (cl *call) tree(b device.Block, off, count int) error {
	lo, hi := blockSpan(count, b)
	if cl.r.c.n == 1 {
		if cl.desc.t == dtype.F32 {
			copy(cl.outF32(off+lo, hi-lo), cl.in.Float32s()[off+lo:off+hi])
		} else {
			copy(cl.outU16(off+lo, hi-lo), cl.in.Uint16s()[off+lo:off+hi])
		}
		return nil
	}
	return cl.treeReduce(b, off, lo, hi, treeSlice, cl.treeOut, nil)
}

// treeOut writes the sums of message elements [x, x+len(sum)) to the output.
func (cl *call) treeOut(x int, sum []float32) {
	if cl.desc.t == dtype.F32 {
		copy(cl.outF32(x, len(sum)), sum)
	} else {
		vec.Narrow(cl.desc.t, cl.outU16(x, len(sum)), sum)
	}
}

// treeState is one block's progress through one chunk of a tree all-reduce.
type treeState struct {
	cl      *call
	b       device.Block
	off     int // the chunk's first element in the message
	lo, hi  int // the block's share of the chunk
	slice   int // elements per slice
	slices  int
	entered uint32 // the entered word of this call
	t       [2]treeCursor
	out     func(x int, sum []float32)
	done    func(x0, x1 int)
	whole   int // slices both trees have broadcast
}

// treeCursor is the block's progress in one tree. A part is a slice's elements of the tree;
// slices without any are skipped on every rank alike.
type treeCursor struct {
	node         treeNode
	base         uint32 // the tree's epoch when the chunk began
	parts        uint32 // non-empty parts of the block's slices
	ups, downs   uint32 // parts reduced, broadcast so far
	upAt, downAt int    // the slice of the next part to reduce, broadcast (slices: none)
}

// treeReduce runs block b's share [lo, hi) of the chunk at off through the double tree,
// slice elements at a time. out gets the sums of every run of elements as they come down
// (x indexes the message; sum is f32 and valid only during the call), done (if not nil) each
// slice [x0, x1) in order once both trees have brought down its sums, while the block would
// otherwise wait for its peers. Every rank must pass the same lo, hi and slice.
func (cl *call) treeReduce(b device.Block, off, lo, hi, slice int, out func(x int, sum []float32), done func(x0, x1 int)) error {
	r := cl.r
	s := treeState{cl: cl, b: b, off: off, lo: lo, hi: hi, slice: slice, slices: (hi - lo + slice - 1) / slice,
		entered: uint32(cl.desc.seq) + 1, out: out, done: done}
	if s.slices == 0 {
		return nil
	}
	atomic.StoreUint32(s.flag(r.rank, treeEntered), s.entered)
	for t := range s.t {
		c := &s.t[t]
		c.node, c.base = r.c.dtree[t][r.rank], r.treeEpoch[t][b.Index]
		for j := range s.slices {
			if !s.empty(t, j) {
				c.parts++
			}
		}
		c.upAt, c.downAt = s.next(t, 0), s.next(t, 0)
		r.treeEpoch[t][b.Index] = c.base + c.parts
	}
	for s.t[0].downAt < s.slices || s.t[1].downAt < s.slices {
		moved := false
		for t := range s.t {
			up, down, err := s.ready(t)
			if err != nil {
				return cl.fail(fmt.Errorf("%s: %w", cl.locate(b, treeWhat), err))
			}
			if up {
				s.reduce(t)
				moved = true
			}
			if down || up && s.t[t].node.parent < 0 {
				s.broadcast(t)
				moved = true
			}
		}
		if moved || s.finish() {
			continue
		}
		err := cl.wait(b, treeWhat, func() bool {
			for t := range s.t {
				if up, down, err := s.ready(t); up || down || err != nil {
					return true
				}
			}
			return false
		}, nil)
		if err != nil {
			return cl.waitError(b, treeWhat, s.missing(), err)
		}
	}
	for s.finish() {
	}
	// Before the block leaves the chunk, its children must have copied its sums out of the
	// staging buffer, which the next chunk or call (of any algorithm) overwrites.
	for {
		acked, err := s.acked()
		if err != nil {
			return cl.fail(fmt.Errorf("%s: %w", cl.locate(b, treeAckWhat), err))
		}
		if acked {
			break
		}
		if err := cl.wait(b, treeAckWhat, func() bool { acked, err := s.acked(); return acked || err != nil }, nil); err != nil {
			return cl.waitError(b, treeAckWhat, s.missing(), err)
		}
	}
	return cl.verify(b, false) // the sums hold every rank's input: every peer published its call
}

// acked reports whether the block's children in both trees have brought down all its parts.
func (s *treeState) acked() (bool, error) {
	for t := range s.t {
		c := &s.t[t]
		for _, ch := range c.node.child {
			if ch >= 0 {
				if ok, err := s.arrived(c, ch, treeDown(t), c.base+c.parts, false); !ok || err != nil {
					return false, err
				}
			}
		}
	}
	return true, nil
}

const (
	treeWhat    = "tree reduce/broadcast"
	treeAckWhat = "tree sums copied by the children"
)

// flag is rank p's tree flag word of the block, as this rank maps it.
func (s *treeState) flag(p, word int) *uint32 {
	return &s.cl.r.peers[p].flags[treeFlagBase+s.b.Index*slotStride+word]
}

// span is slice j of the block: chunk elements [s0, s1).
func (s *treeState) span(j int) (s0, s1 int) {
	s0 = s.lo + j*s.slice
	return s0, min(s0+s.slice, s.hi)
}

// run returns the first run [a, b) of chunk elements at or after x and before end that tree
// t carries; a == end when there is none.
func (s *treeState) run(t, x, end int) (a, b int) {
	g := (s.off + x) / treeGrain
	if g%2 != t {
		g++
		x = g*treeGrain - s.off
	}
	if x >= end {
		return end, end
	}
	return x, min((g+1)*treeGrain-s.off, end)
}

// empty reports whether tree t carries none of slice j.
func (s *treeState) empty(t, j int) bool {
	s0, s1 := s.span(j)
	a, _ := s.run(t, s0, s1)
	return a == s1
}

// next returns the first slice from j on that tree t carries part of (s.slices if none).
func (s *treeState) next(t, j int) int {
	for j < s.slices && s.empty(t, j) {
		j++
	}
	return j
}

// ready reports whether the block can reduce its next part of tree t (its children's
// partial sums have arrived) and broadcast its next one (the parent's sums have). It
// fails when a peer's flag holds what no flag of this chunk can, or a child runs another
// call than this one: a rank that skipped one.
func (s *treeState) ready(t int) (up, down bool, err error) {
	c := &s.t[t]
	if c.upAt < s.slices {
		up = true
		for _, ch := range c.node.child {
			if ch >= 0 {
				ok, err := s.arrived(c, ch, treeUp(t), c.base+c.ups+1, true)
				if err != nil {
					return false, false, err
				}
				up = up && ok
			}
		}
	}
	if c.downs < c.ups && c.node.parent >= 0 {
		down, err = s.arrived(c, c.node.parent, treeDown(t), c.base+c.downs+1, false)
	}
	return up, down, err
}

// arrived reports whether peer p's flag word has reached want. A legitimate flag lies in
// [base, base+parts]: nobody leaves a chunk before its peers in the tree have seen all its
// parts. A child is in this call when its up flag has arrived (it needs this rank's
// broadcast to leave it); a parent may already have gone on to the next one.
func (s *treeState) arrived(c *treeCursor, p, word int, want uint32, child bool) (bool, error) {
	f := atomic.LoadUint32(s.flag(p, word))
	if f-c.base > c.parts {
		if e := atomic.LoadUint32(s.flag(p, treeEntered)); e != s.entered {
			return false, s.cl.skipped(p, e)
		}
		return false, fmt.Errorf("rank %d wrote %#x into its tree flag, rank %d waits for %#x: %w", p, f, s.cl.r.rank, want, ErrCorruptFlag)
	}
	if int32(f-want) < 0 {
		return false, nil
	}
	if e := atomic.LoadUint32(s.flag(p, treeEntered)); child && e != s.entered {
		return false, s.cl.skipped(p, e)
	}
	return true, nil
}

// reduce sums the block's next part of tree t: own input, then the children's partial
// sums, into the staging buffer, and tells the parent.
func (s *treeState) reduce(t int) {
	cl, c := s.cl, &s.t[t]
	r := cl.r
	own := r.peers[r.rank].f32
	s0, s1 := s.span(c.upAt)
	for a, b := s.run(t, s0, s1); a < s1; a, b = s.run(t, b, s1) {
		var srcs [3][]float32
		k := 0
		if cl.desc.t == dtype.F32 {
			srcs[0], k = cl.in.Float32s()[s.off+a:s.off+b], 1
		} else {
			vec.Widen(cl.desc.t, own[a:b], cl.in.Uint16s()[s.off+a:s.off+b])
			srcs[0], k = own[a:b], 1
		}
		for _, ch := range c.node.child {
			if ch >= 0 {
				srcs[k] = r.peers[ch].f32[a:b]
				k++
			}
		}
		vec.SumF32(own[a:b], srcs[:k])
	}
	c.ups++
	c.upAt = s.next(t, c.upAt+1)
	if p := c.node.parent; p >= 0 {
		v := c.base + c.ups
		if cl.fault == FaultCorrupt && s.b.Index == 0 {
			if cl.corrupted {
				return // the corrupted flag stays: the parent must see it
			}
			cl.corrupted, v = true, c.base+c.parts+2 // an epoch this chunk never reaches
		}
		atomic.StoreUint32(s.flag(r.rank, treeUp(t)), v)
		r.c.ranks[p].dev.Ring()
	}
}

// broadcast brings the sums of the block's next part of tree t down: from the parent into
// the staging buffer (where the children read them; a leaf reads them in place), to out,
// and tells the children, and the parent that it has them.
func (s *treeState) broadcast(t int) {
	cl, c := s.cl, &s.t[t]
	r := cl.r
	own := r.peers[r.rank].f32
	s0, s1 := s.span(c.downAt)
	for a, b := s.run(t, s0, s1); a < s1; a, b = s.run(t, b, s1) {
		sum := own[a:b]
		if p := c.node.parent; p >= 0 {
			sum = r.peers[p].f32[a:b]
			if !c.node.leaf() {
				copy(own[a:b], sum)
				sum = own[a:b]
			}
		}
		s.out(s.off+a, sum)
	}
	c.downs++
	c.downAt = s.next(t, c.downAt+1)
	atomic.StoreUint32(s.flag(r.rank, treeDown(t)), c.base+c.downs) // for the children, and the parent's ack
	for _, p := range [3]int{c.node.parent, c.node.child[0], c.node.child[1]} {
		if p >= 0 {
			r.c.ranks[p].dev.Ring()
		}
	}
}

// finish runs done on the next slice that both trees have brought down, if there is one.
// The block does that when it would otherwise wait for its peers.
func (s *treeState) finish() bool {
	if s.whole >= min(s.t[0].downAt, s.t[1].downAt) {
		return false
	}
	if s.done != nil {
		s0, s1 := s.span(s.whole)
		s.done(s.off+s0, s.off+s1)
	}
	s.whole++
	return true
}

// missing returns the ranks a deadline names: those whose block has not entered this call
// (it never arrived, or stalls or skipped it), else the block's neighbours in the trees.
func (s *treeState) missing() []int {
	var ranks []int
	for p := range s.cl.r.c.n {
		if atomic.LoadUint32(s.flag(p, treeEntered)) != s.entered {
			ranks = append(ranks, p)
		}
	}
	if len(ranks) > 0 {
		return ranks
	}
	for t := range s.t {
		for _, p := range [3]int{s.t[t].node.parent, s.t[t].node.child[0], s.t[t].node.child[1]} {
			if p >= 0 && !slices.Contains(ranks, p) {
				ranks = append(ranks, p)
			}
		}
	}
	slices.Sort(ranks)
	return ranks
}

// skipped is the error of a call that found peer p in another call (entered word e): the
// rank ahead skipped the other's call.
func (cl *call) skipped(p int, e uint32) error {
	seq, d := cl.desc.seq, int64(int32(e-(uint32(cl.desc.seq)+1)))
	theirs := uint64(int64(seq) + d)
	ahead, aheadSeq, behind := p, theirs, seq
	if d < 0 {
		ahead, aheadSeq, behind = cl.r.rank, seq, theirs
	}
	desc := "(call unknown)"
	if d := cl.r.c.published[ahead][aheadSeq%publishedDepth].Load(); d != nil && d.seq == aheadSeq {
		desc = d.String()
	}
	return fmt.Errorf("rank %d already began seq %d %s, so it skipped seq %d", ahead, aheadSeq, desc, behind)
}
