package comm

import (
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/vec"
)

// flaggedPrims is the LL or LL128 protocol, by its line format w: a step's result goes
// straight into each receiver's protocol buffer, flags inside the data (protobuf.go), and
// the receiver starts on it as soon as it arrives: no barrier, no fence, no staging copy.
// A step's values live in the block's scratch rows, a tree's elements packed in order
// (tree 0's first), so that a slot carries them whole.
type flaggedPrims struct {
	cl  *call
	b   device.Block
	off int
	out func(x int, sum []float32)
	w   wire
	pc  piece // the piece under way
	// packed holds, per tree (and the ring's, first), where the values of the last extent
	// asked for lie in the first scratch row: a step's readiness is polled often.
	packed [3]struct {
		ext   extent
		at, m int
	}
}

func (p *flaggedPrims) slotElems() int          { return p.w.elems(p.cl.r.c.slotWords) }
func (p *flaggedPrims) inFlight() int           { return 1 }
func (p *flaggedPrims) beginPiece()             { p.pc = p.cl.nextPiece(p.w, p.b) }
func (p *flaggedPrims) beginChunk(int)          {}
func (p *flaggedPrims) endChunk() error         { return nil }
func (p *flaggedPrims) scratch(i int) []float32 { return p.cl.r.scratch[p.b.Index][i] }

// values is where the step's values live: the extent's elements packed in the first row,
// after tree 0's where the extent holds tree 1's.
func (p *flaggedPrims) values(ext extent) []float32 {
	at, m := p.packing(ext)
	return p.scratch(0)[at : at+m]
}

// packing returns where in the first row the extent's values begin, and how many they are.
func (p *flaggedPrims) packing(ext extent) (at, m int) {
	c := &p.packed[ext.tree+1] // the zero value is right for the extent it holds
	if c.ext != ext {
		c.ext, c.at, c.m = ext, 0, ext.len(p.off)
		if ext.tree == 1 {
			c.at = extent{ext.x, ext.e, 0}.len(p.off)
		}
	}
	return c.at, c.m
}

// ready reports whether every source's slot holds this piece's data, or a flag that run's
// receive must report: a sender writes in order, so the slot's last element shows it. It
// returns no watch (see watch).
func (p *flaggedPrims) ready(st *step) (bool, watch, error) {
	_, m := p.packing(st.ext)
	if m == 0 {
		return true, watch{}, nil
	}
	for _, l := range st.from.l[:st.from.n] {
		f := p.w.flagOf(p.cl.slotOf(p.pc, p.cl.r.rank, p.b, l.slot), m-1)
		if f != p.pc.flag && staleFlag(f, p.pc.flag) {
			return false, watch{}, nil
		}
	}
	return true, watch{}, nil
}

func (p *flaggedPrims) run(st *step) error {
	cl := p.cl
	val := p.values(st.ext)
	switch {
	case st.reduce:
		at := 0
		st.ext.runs(p.off, func(a, z int) { cl.inputF32To(val[at:at+z-a], p.off+a); at += z - a })
		for k, l := range st.from.l[:st.from.n] {
			got := p.scratch(1 + k)[:len(val)]
			if err := cl.receive(p.pc, l.peer, p.b, l.slot, got, st.what); err != nil {
				return err
			}
			if len(got) > 0 { // a source of partial sums cannot leave the call before it gets this rank's
				if err := cl.sameCall(p.b, l.peer, st.what); err != nil {
					return err
				}
			}
			vec.AddF32(val, got)
		}
	case st.from.n > 0:
		if err := cl.receive(p.pc, st.from.l[0].peer, p.b, st.from.l[0].slot, val, st.what); err != nil {
			return err
		}
	}
	if st.out {
		at := 0
		st.ext.runs(p.off, func(a, z int) { cl.writeSums(p.out, p.off+a, val[at:at+z-a]); at += z - a })
	}
	for _, l := range st.to.l[:st.to.n] {
		cl.send(p.pc, l.peer, p.b, l.slot, val)
	}
	return nil
}
