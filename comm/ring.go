package comm

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
)

// ring is NCCL's shape: reduce-scatter then all-gather around the ring 0 → 1 → … → n-1 → 0,
// written once over the call's protocol (prims.go). The chunk is cut into n segments
// (sliceSpan; which rank starts a segment's sum decides its rounding), and the block's
// share of every segment goes round in pieces of what a step carries (under Simple, all
// of it in one), every step of a piece before the next. Reduce-scatter: rank r sends its
// own segment r; step s receives segment (r-1-s) mod n from the left neighbour, adds it to
// its own input (own + left) and sends the sum on, so after step n-2 it holds the sum of
// segment r+1, its output, which the all-gather passes round the ring: step j receives
// segment (r-j) mod n, writes it out and sends it on. Each rank moves 2(n-1)/n·S in 2(n-1)
// steps; partial sums are f32, so 16-bit dtypes round once, at the end.
func (cl *call) ring(b device.Block, off, count int) error {
	r, n := cl.r, cl.r.c.n
	if n == 1 {
		cl.copyThrough(b, off, count)
		return nil
	}
	cl.enter(b)
	p := cl.newPrims(b, off, nil)
	left, right := (r.rank+n-1)%n, (r.rank+1)%n
	var lo, hi [device.MaxNodeDevices]int
	longest := 0
	for q := range n {
		lo[q], hi[q] = cl.sliceSpan(count, q, b)
		longest = max(longest, hi[q]-lo[q])
	}
	piece := max(1, min(longest, p.slotElems()))
	pieces := max(1, (longest+piece-1)/piece) // Simple's barriers run even where the block has no elements
	p.beginChunk(pieces)
	st := &cl.r.prims[b.Index].ringStep // the step under way lives in the rank (prims.run)
	for x := 0; x < pieces*piece; x += piece {
		p.beginPiece()
		seg := func(q int) extent {
			a := min(lo[q]+x, hi[q])
			return extent{x: a, e: min(a+piece, hi[q]), tree: -1}
		}
		*st = step{ext: seg(r.rank), to: oneLink(right, 0), reduce: true, word: lockstep, what: ringStagedWhat}
		if err := p.run(st); err != nil {
			return err
		}
		for s := range n - 1 { // the last sends the all-gather's first step
			*st = step{ext: seg((r.rank - 1 - s + n) % n), from: oneLink(left, s), to: oneLink(right, s+1), reduce: true, out: s == n-2,
				word: lockstep, what: ringWhats[0][s]}
			if err := p.run(st); err != nil {
				return err
			}
		}
		for j := range n - 1 {
			*st = step{ext: seg((r.rank - j + n) % n), from: oneLink(left, n-1+j), out: true, word: lockstep, what: ringWhats[1][j]}
			if j < n-2 {
				st.to = oneLink(right, n+j)
			}
			if err := p.run(st); err != nil {
				return err
			}
		}
	}
	if err := p.endChunk(); err != nil {
		return err
	}
	return cl.verify(b, false) // the sums hold every rank's input: every peer published its call
}

const ringStagedWhat = "ring inputs staged"

// ringWhats names the ring's steps in waits and errors: [0][s] reduce-scatter step s,
// [1][j] all-gather step j. It is never written.
var ringWhats = func() (w [2][device.MaxNodeDevices]string) {
	for s := range device.MaxNodeDevices {
		w[0][s] = fmt.Sprintf("ring reduce-scatter step %d", s)
		w[1][s] = fmt.Sprintf("ring all-gather step %d", s)
	}
	return w
}()
