package comm

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// simplePrims is the Simple protocol: a step's result stays in the sender's staging buffer
// (f32 partial sums whatever the dtype, so 16-bit sums round once, at the end), where its
// receivers read it in place: bulk copies, then a signal. A lockstep step (the ring's)
// signals with a barrier of every rank, since the next step may overwrite a segment the
// receiver is still reading otherwise. The tree's steps each own their place in the buffer
// for the chunk, so they signal point to point: the sender bumps its flag word of the
// step's kind (treeUp, treeDown) to the parts it has done, as an epoch counting from the
// communicator's start, and only that sender writes it; before a block leaves the chunk,
// the peers that copy its sums must have said (their own down words) that they have.
type simplePrims struct {
	cl  *call
	b   device.Block
	off int
	out func(x int, sum []float32)
	own []float32 // this rank's staging buffer

	entered uint32            // the entered word of this call
	pieces  uint32            // the chunk's pieces: no legitimate flag lies beyond base+pieces
	base    [treeWords]uint32 // per word, its tree's epoch when the chunk began
	ran     [treeWords]uint32 // per word, the steps of its kind run in this chunk
	copiers [treeWords]links  // per word, the peers that copy what this rank announces on it
}

func (p *simplePrims) slotElems() int { return math.MaxInt }
func (p *simplePrims) inFlight() int  { return math.MaxInt }
func (p *simplePrims) beginPiece()    {}

// beginChunk takes the trees' epochs, which the chunk's steps count on from.
func (p *simplePrims) beginChunk(pieces int) {
	r := p.cl.r
	p.entered, p.pieces = uint32(p.cl.desc.seq)+1, uint32(pieces)
	for t := range 2 {
		p.base[treeUp(t)] = r.treeEpoch[t][p.b.Index]
		p.base[treeDown(t)] = r.treeEpoch[t][p.b.Index]
	}
}

func (p *simplePrims) ready(st *step) (bool, watch, error) {
	if st.word == lockstep {
		return true, watch{}, nil // the barrier that ended the step before brought the data
	}
	want := p.base[st.word] + p.ran[st.word] + 1
	for _, l := range st.from.l[:st.from.n] {
		if ok, w, err := p.arrived(l.peer, st.word, want, st.reduce); !ok || err != nil {
			return false, w, err
		}
	}
	return true, watch{}, nil
}

// arrived reports whether peer's flag word has reached want, and where it has not, the
// word's watch. A legitimate flag lies in [base, base+pieces]: nobody leaves a chunk
// before its peers in the tree have seen all its parts. A child (whose partial sums this
// rank reduces) is in this call when its flag has arrived: it needs this rank's sums to
// leave it; a parent may already be in the next one.
func (p *simplePrims) arrived(peer, word int, want uint32, child bool) (bool, watch, error) {
	cl := p.cl
	base := p.base[word]
	flag := cl.treeFlag(peer, p.b, word)
	f := atomic.LoadUint32(flag)
	if f-base > p.pieces {
		if e := atomic.LoadUint32(cl.enteredWord(peer, p.b)); e != p.entered {
			return false, watch{}, cl.skipped(peer, e)
		}
		return false, watch{}, fmt.Errorf("rank %d wrote %#x into its tree flag, rank %d waits for %#x: %w", peer, f, cl.r.rank, want, ErrCorruptFlag)
	}
	if int32(f-want) < 0 {
		return false, watch{word: flag, held: f}, nil
	}
	if e := atomic.LoadUint32(cl.enteredWord(peer, p.b)); child && e != p.entered {
		return false, watch{}, cl.skipped(peer, e)
	}
	return true, watch{}, nil
}

func (p *simplePrims) run(st *step) error {
	cl := p.cl
	st.ext.runs(p.off, func(a, z int) {
		sum := p.own[a:z]
		if st.reduce {
			p.reduce(st, a, z)
		} else if st.from.n > 0 {
			sum = cl.r.peers[st.from.l[0].peer].f32[a:z]
			if st.to.n > 0 { // the receivers read it here
				copy(p.own[a:z], sum)
				sum = p.own[a:z]
			}
		}
		if st.out {
			p.cl.writeSums(p.out, p.off+a, sum)
		}
	})
	if st.word == lockstep {
		return cl.barrier(p.b, st.what)
	}
	p.signal(st)
	return nil
}

// reduce writes into the staging buffer at [a, z) the input there, then each source's
// partial sums, added in that order.
func (p *simplePrims) reduce(st *step, a, z int) {
	cl := p.cl
	own := p.own[a:z]
	var srcs [3][]float32
	if cl.desc.t == dtype.F32 {
		srcs[0] = cl.in.Float32s()[p.off+a : p.off+z]
	} else {
		vec.Widen(cl.desc.t, own, cl.in.Uint16s()[p.off+a:p.off+z])
		srcs[0] = own
	}
	k := 1
	for _, l := range st.from.l[:st.from.n] {
		srcs[k] = cl.r.peers[l.peer].f32[a:z]
		k++
	}
	vec.SumF32(own, srcs[:k])
}

// signal announces a tree step on its flag word to whoever reads it: its receivers and,
// after a copy, its source, which waits for the copies before it leaves the chunk. Under
// FaultCorrupt, block 0's first partial sums sent up announce an epoch this chunk never
// reaches, and the flag stays so.
func (p *simplePrims) signal(st *step) {
	cl, r := p.cl, p.cl.r
	p.ran[st.word]++
	copied := !st.reduce && st.from.n > 0
	if st.to.n == 0 && !copied {
		return // the root's sums: nobody reads them from here
	}
	if !st.reduce && st.to.n > 0 {
		p.copiers[st.word] = st.to
	}
	v := p.base[st.word] + p.ran[st.word]
	if st.reduce && cl.fault == FaultCorrupt && p.b.Index == 0 {
		if cl.corrupted {
			return
		}
		cl.corrupted, v = true, p.base[st.word]+p.pieces+2
	}
	atomic.StoreUint32(cl.treeFlag(r.rank, p.b, st.word), v)
	for _, l := range st.to.l[:st.to.n] {
		r.ringPeer(l.peer)
	}
	if copied {
		r.ringPeer(st.from.l[0].peer)
	}
}

// endChunk waits until the peers that copy this rank's sums out of its staging buffer have
// copied all of them, then moves the trees' epochs past the chunk.
func (p *simplePrims) endChunk() error {
	cl, b := p.cl, p.b
	var acks [4]struct { // per tree, the children, which copy this rank's sums
		peer, word int
		want       uint32
	}
	n := 0
	for w := range p.copiers {
		ls := &p.copiers[w] // not a copy of the array: this runs once a chunk per block
		for _, l := range ls.l[:ls.n] {
			acks[n].peer, acks[n].word, acks[n].want = l.peer, w, p.base[w]+p.ran[w]
			n++
		}
	}
	acked := func() (bool, watch, error) {
		for _, a := range acks[:n] {
			if ok, w, err := p.arrived(a.peer, a.word, a.want, false); !ok || err != nil {
				return false, w, err
			}
		}
		return true, watch{}, nil
	}
	for {
		ok, w, err := acked()
		if err != nil {
			return cl.fail(fmt.Errorf("%s: %w", cl.locate(b, treeAckWhat), err))
		}
		if ok {
			break
		}
		if err := cl.wait(b, treeAckWhat, w.changed, nil); err != nil {
			return cl.waitError(b, treeAckWhat, cl.notEntered(b, cl.treeNeighbours()...), err)
		}
	}
	for t := range 2 {
		cl.r.treeEpoch[t][b.Index] = p.base[treeUp(t)] + p.ran[treeUp(t)]
	}
	return nil
}
