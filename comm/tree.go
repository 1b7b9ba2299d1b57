package comm

import (
	"fmt"
	"slices"

	"github.com/tpslice/tpslice/device"
)

// The tree all-reduce cuts messages twice: element x of a message belongs to tree
// (x / treeGrain) mod 2, so each tree carries half of any message longer than one grain,
// and the same element always takes the same tree (whatever the chunking, fused or not);
// a block's share of a chunk is pipelined through the trees in pieces of at most treeSlice
// elements (under LL and LL128, what a slot holds).
const (
	treeGrain = 512
	treeSlice = 32 << 10
)

// The tree flags of block b live in one cache line of each rank's signal buffer, after the
// barriers' flags, and only their owner writes them: the sequence number (+1) of the call
// the block last entered (every protocol's), then Simple's per tree: the parts it has
// reduced (up) and broadcast (down) so far, as epochs that count from the communicator's
// start.
const (
	treeFlagBase = 2 * MaxBlocks * slotStride
	treeEntered  = 0
	treeWords    = 5
)

func treeUp(t int) int   { return 1 + 2*t }
func treeDown(t int) int { return 2 + 2*t }

// treeFlag is rank p's tree flag word of block b, as this rank maps it.
func (cl *call) treeFlag(p int, b device.Block, word int) *uint32 {
	return &cl.r.peers[p].flags[treeFlagBase+b.Index*slotStride+word]
}

// The tree's slots in an LL or LL128 piece: per tree, the partial sums of the parent's two
// children, then per tree the sums from the parent.
const treeSlots = 6

func treeUpSlot(t, child int) int { return 2*t + child }
func treeDownSlot(t int) int      { return 4 + t }

const (
	treeWhat     = "tree reduce/broadcast"
	treeUpWhat   = "tree partial sums from a child"
	treeDownWhat = "tree sums from the parent"
	treeAckWhat  = "tree sums copied by the children"
)

// tree is NCCL's double binary tree all-reduce (see buildDoubleTree): each tree reduces
// its half of the message up to its root, then broadcasts the sums back down, in pieces,
// so that a piece goes down while the next ones still come up (under Simple; under LL and
// LL128 one tree's sums come down while the other's still go up). Partial sums are f32, so
// bf16 rounds once, at the end.
//
// Summation order: for an element carried by tree t, each rank sums its own input, then its
// children's partial sums, smaller child rank first, and the root's sum is the result. With
// n = 8, tree 0 (7 → 3 → {1 → {0, 2}, 5 → {4, 6}}) gives in7 + (((in3 + ((in1 + in0) + in2))
// + ((in5 + in4) + in6))). That is another rounding than the rank order of the other
// algorithms: results are within the same tolerance of the exact sum, not bitwise equal to
// theirs. Every rank gets the root's bits (the broadcast copies them), and the order depends
// only on n and the element's index, so repeated calls give the same bits. On one rank the
// tree is a copy.
func (cl *call) tree(b device.Block, off, count int) error {
	if cl.r.c.n == 1 {
		cl.copyThrough(b, off, count)
		return nil
	}
	lo, hi := blockSpan(count, b)
	return cl.treeReduce(b, off, lo, hi, 1, nil, nil)
}

// treeState is one block's progress through one chunk of a tree all-reduce.
type treeState struct {
	p      prims
	off    int // the chunk's first element in the message
	lo, hi int // the block's share of the chunk
	piece  int // elements per piece
	pieces int
	// inFlight is the protocol's (prims.inFlight), read once: every pass asks it.
	inFlight int
	begun    int // pieces begun
	whole    int // pieces both trees have broadcast
	t        [2]treeCursor
	steps    *[2][2]step // per tree, its next steps up and down (treeSteps, moveTo)
	// waiting lists the steps that may run but for their sources, as the last pass over
	// the steps found them, and what each waits on; nothing moves until one of them can.
	waiting [4]struct {
		st    *step
		watch watch
	}
	nwaiting int
	done     func(x0, x1 int)
}

// treeCursor is the block's progress in one tree. A part is a piece's elements of the
// tree; pieces without any are skipped on every rank alike.
type treeCursor struct {
	upAt, downAt int // the piece of the next part to reduce, broadcast (pieces: none)
}

// treeReduce runs block b's share [lo, hi) of the chunk at off through the double tree,
// in pieces of whole units of elements, over the call's protocol (prims.go). out (nil:
// the call's output) gets the sums of every run of elements as they come down (x indexes
// the message; sum is f32 and valid only during the call), done (if not nil) each piece
// [x0, x1) in order once both trees have brought down its sums, while the block would
// otherwise wait for its peers.
// Every rank must pass the same lo, hi and unit; under LL and LL128 a unit must fit a slot.
//
// Each tree takes two steps a part, up and down (treeSteps). The block takes whichever
// steps are ready and waits only when none is, so a rank that is a leaf in one tree sends
// that tree's input at once; it begins a piece only when fewer than the protocol's
// inFlight pieces are unfinished.
func (cl *call) treeReduce(b device.Block, off, lo, hi, unit int, out func(x int, sum []float32), done func(x0, x1 int)) error {
	p := cl.newPrims(b, off, out)
	piece := max(1, min(treeSlice, p.slotElems())/unit) * unit
	// The steps live in the rank: the polls take their addresses, which would move them
	// to the heap every call from here; their links, which depend only on the rank, are
	// set on its first call.
	pr := &cl.r.prims[b.Index]
	s := treeState{p: p, off: off, lo: lo, hi: hi, piece: piece, pieces: (hi - lo + piece - 1) / piece,
		inFlight: p.inFlight(), steps: &pr.treeSteps, done: done}
	if s.pieces == 0 {
		return nil
	}
	cl.enter(b)
	p.beginChunk(s.pieces)
	for t := range s.t {
		if !pr.treeLinked {
			cl.treeSteps(t, &s.steps[t][0], &s.steps[t][1])
		}
		s.moveTo(t, false, s.next(t, 0))
		s.moveTo(t, true, s.next(t, 0))
	}
	pr.treeLinked = true
	for s.t[0].downAt < s.pieces || s.t[1].downAt < s.pieces {
		moved := false
		s.nwaiting = 0
		for t := range s.t {
			for _, down := range [2]bool{false, true} {
				st, ok := s.step(t, down)
				if !ok {
					continue
				}
				for ; !down && s.begun <= s.t[t].upAt; s.begun++ {
					p.beginPiece() // numbered before its data is looked for
				}
				ready, w, err := p.ready(st)
				if err != nil {
					return cl.fail(fmt.Errorf("%s: %w", cl.locate(b, treeWhat), err))
				}
				if !ready {
					s.waiting[s.nwaiting].st, s.waiting[s.nwaiting].watch = st, w
					s.nwaiting++
					continue
				}
				if err := s.run(t, down, st); err != nil {
					return err
				}
				moved = true
			}
		}
		if moved || s.finish() {
			continue
		}
		err := cl.wait(b, treeWhat, s.anyReady, nil)
		if err != nil {
			return cl.waitError(b, treeWhat, cl.notEntered(b, cl.treeNeighbours()...), err)
		}
	}
	for s.finish() {
	}
	if err := p.endChunk(); err != nil {
		return err
	}
	return cl.verify(b, false) // the sums hold every rank's input: every peer published its call
}

// step returns tree t's next step up (down false) or down, and whether it may run now
// but for its sources: a part goes down after it went up, and a piece begins only within
// the protocol's window.
func (s *treeState) step(t int, down bool) (*step, bool) {
	c := &s.t[t]
	st := &s.steps[t][b2i(down)]
	switch {
	case down && c.downAt >= min(c.upAt, s.pieces):
		return st, false
	case !down && (c.upAt >= s.pieces || c.upAt-min(s.t[0].downAt, s.t[1].downAt) >= s.inFlight):
		return st, false
	}
	return st, true
}

// moveTo points tree t's step up (down false) or down at piece j.
func (s *treeState) moveTo(t int, down bool, j int) {
	c := &s.t[t]
	if down {
		c.downAt = j
	} else {
		c.upAt = j
	}
	if j < s.pieces {
		x0, x1 := s.span(j)
		s.steps[t][b2i(down)].ext = extent{x: x0, e: x1, tree: t}
	}
}

// treeSteps sets this rank's two steps in tree t, but for their elements: up, receive
// the children's partial sums (smaller child first), add them to the input and send the
// result to the parent; down, receive the parent's sums (the root has its own), write them
// out and send them to the children.
func (cl *call) treeSteps(t int, up, down *step) {
	dt, rank := cl.r.c.dtree, cl.r.rank
	node := dt[t][rank]
	*up = step{reduce: true, word: treeUp(t), what: treeUpWhat}
	*down = step{out: true, word: treeDown(t), what: treeDownWhat}
	for k, ch := range node.child {
		if ch >= 0 {
			up.from.add(ch, treeUpSlot(t, k))
			down.to.add(ch, treeDownSlot(t))
		}
	}
	if p := node.parent; p >= 0 {
		k := 0
		if dt[t][p].child[0] != rank {
			k = 1
		}
		up.to.add(p, treeUpSlot(t, k))
		down.from.add(p, treeDownSlot(t))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// run takes st, tree t's next step up or down, and moves the tree's cursor past it.
func (s *treeState) run(t int, down bool, st *step) error {
	if err := s.p.run(st); err != nil {
		return err
	}
	c := &s.t[t]
	if down {
		s.moveTo(t, true, s.next(t, c.downAt+1))
	} else {
		s.moveTo(t, false, s.next(t, c.upAt+1))
	}
	return nil
}

// anyReady reports whether a waiting step may run now, or must report an error: it polls
// only the steps that the last pass found waiting, each by its watch's one word where the
// protocol left one, for on 2 cores every poll's cost lengthens every hop of the tree.
func (s *treeState) anyReady() bool {
	for _, w := range s.waiting[:s.nwaiting] {
		if w.watch.word != nil {
			if w.watch.changed() {
				return true
			}
		} else if ready, _, err := s.p.ready(w.st); ready || err != nil {
			return true
		}
	}
	return false
}

// span is piece j of the block: chunk elements [x0, x1).
func (s *treeState) span(j int) (x0, x1 int) {
	x0 = s.lo + j*s.piece
	return x0, min(x0+s.piece, s.hi)
}

// next returns the first piece from j on that tree t carries part of (s.pieces if none).
func (s *treeState) next(t, j int) int {
	for ; j < s.pieces; j++ {
		x0, x1 := s.span(j)
		if (extent{x: x0, e: x1, tree: t}).len(s.off) > 0 {
			break
		}
	}
	return j
}

// finish runs done on the next piece that both trees have brought down, if there is one.
// The block does that when it would otherwise wait for its peers.
func (s *treeState) finish() bool {
	if s.whole >= min(s.t[0].downAt, s.t[1].downAt) {
		return false
	}
	if s.done != nil {
		x0, x1 := s.span(s.whole)
		s.done(s.off+x0, s.off+x1)
	}
	s.whole++
	return true
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

// treeElems is how many of message elements [0, y) tree t carries: a grain of every two.
func treeElems(t, y int) int {
	pairs, rest := y/(2*treeGrain), y%(2*treeGrain)
	if t == 0 {
		return pairs*treeGrain + min(rest, treeGrain)
	}
	return pairs*treeGrain + max(rest-treeGrain, 0)
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
	if w := (descWords{}); cl.r.publishedCall(ahead, aheadSeq, &w) {
		d := w.decode(aheadSeq)
		desc = d.String()
	}
	return fmt.Errorf("rank %d already began seq %d %s, so it skipped seq %d", ahead, aheadSeq, desc, behind)
}
