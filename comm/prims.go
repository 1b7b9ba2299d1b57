package comm

import (
	"sync/atomic"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// A schedule says which rank sends which elements to which peer at which step; a protocol
// says how the data travels and how its arrival is signalled. As NCCL writes runRing and
// runTreeUpDown once over prims_simple.h, prims_ll.h and prims_ll128.h, the ring (ring.go)
// and the tree (tree.go) are written once over prims, which Simple (prims_simple.go) and
// LL and LL128 (prims_flagged.go, over their line formats proto_ll.go and proto_ll128.go)
// implement. Each step adds the same values in the same order under every protocol (this
// rank's input, then each source in the order the step lists them, in f32), so every
// protocol gives the same bits.
//
// A schedule cuts its block's share of a chunk into pieces, at most slotElems elements a
// step, and takes every step of a piece before it begins more than inFlight pieces ahead.
type prims interface {
	// slotElems is the most elements one step of a piece carries: what a slot holds under
	// LL and LL128; under Simple, where peers read the staging buffer in place, no limit.
	slotElems() int
	// inFlight is how many pieces may be begun and not finished: one under LL and LL128,
	// whose two halves of slots alternate between pieces; under Simple, every piece of the
	// chunk, each in its own place of the staging buffer.
	inFlight() int
	// beginChunk begins the block's share of a chunk, cut into pieces pieces.
	beginChunk(pieces int)
	// beginPiece numbers the block's next piece; every rank begins the same pieces.
	beginPiece()
	// ready reports whether st can run without waiting: the data of its sources has
	// arrived. It fails on a flag that no peer writes there, or a peer in another call.
	// Where st waits on one flag word, ready also returns that word and what it held.
	ready(st *step) (bool, watch, error)
	// run takes step st, waiting for its sources as long as the deadline allows. The step
	// lives in the rank (blockPrims), not on the schedule's stack: a pointer passed through
	// an interface moves a local to the heap.
	run(st *step) error
	// endChunk returns once the peers have taken what this rank left for them in its own
	// buffers, which the next chunk or call overwrites.
	endChunk() error
}

// A step is one primitive on the chunk elements ext: receive from every link of from, in
// order; with reduce, add what arrived to this rank's input (the input alone where from
// is empty), else take it as it is (where from is empty: the values this rank's last
// step on ext left, the tree root's sums); with out, write the result to the output; send
// it on every link of to. NCCL's primitives are steps: send (reduce, no sources),
// recvReduceSend, recvReduceCopySend (reduce and out), recvCopySend and recv (out, no
// receivers).
type step struct {
	ext      extent
	from, to links
	reduce   bool
	out      bool
	// word is the flag word in the sender's signal line with which Simple announces the
	// step (treeUp, treeDown), or lockstep: every rank takes the step at once, and Simple
	// ends it with a barrier of every rank.
	word int
	what string // names the step in waits and errors
}

// A watch is the flag word that a step which cannot run waits on, and the value ready read
// there: until the word changes, the step stays as it was, so a waiter watches one word
// with one atomic load instead of asking the protocol again. Under Simple a step waits on
// its first source whose flag has not arrived; under LL and LL128 there is none (word nil:
// a slot's flags are not one word), and the waiter asks ready.
type watch struct {
	word *uint32
	held uint32
}

// changed reports whether the step may run now, or must report an error: the word it
// waits on no longer holds what ready read there.
func (w watch) changed() bool { return atomic.LoadUint32(w.word) != w.held }

// lockstep is step.word for a schedule whose ranks take each step together (the ring):
// under Simple a rank may overwrite what it sent only once its receivers have read it.
const lockstep = -1

// A link is a step's connection with one peer: the peer, and the slot of the receiver's
// protocol buffer the data goes through under LL and LL128 (one per step of a piece).
type link struct{ peer, slot int }

// links is a step's sources or receivers: at most two (a tree node's children).
type links struct {
	l [2]link
	n int
}

// oneLink is a single link.
func oneLink(peer, slot int) links { return links{l: [2]link{{peer, slot}}, n: 1} }

// add appends a link.
func (ls *links) add(peer, slot int) { ls.l[ls.n] = link{peer, slot}; ls.n++ }

// extent is the chunk elements a step carries: [x, e), or, with tree ≥ 0, the runs of
// [x, e) that tree carries (treeRuns), packed in order under LL and LL128.
type extent struct{ x, e, tree int }

// runs calls fn for every run [a, z) of chunk elements the extent holds, in order; the
// chunk starts at message element off.
func (ext extent) runs(off int, fn func(a, z int)) {
	if ext.tree < 0 {
		if ext.x < ext.e {
			fn(ext.x, ext.e)
		}
		return
	}
	treeRuns(off, ext.x, ext.e, ext.tree, fn)
}

// len is how many elements the extent holds.
func (ext extent) len(off int) int {
	if ext.tree < 0 {
		return ext.e - ext.x
	}
	return treeElems(ext.tree, off+ext.e) - treeElems(ext.tree, off+ext.x)
}

// newPrims returns the call's protocol on block b for the chunk at element off: Simple
// unless the call runs LL or LL128. out writes the sums of message elements
// [x, x+len(sum)) where the call wants them; nil writes them to the call's output. The
// block's primitives live in the rank (blockPrims), so a kernel allocates nothing (a
// method value such as cl.writeOut, kept there, would be allocated every call).
func (cl *call) newPrims(b device.Block, off int, out func(x int, sum []float32)) prims {
	pr := &cl.r.prims[b.Index]
	switch cl.desc.proto {
	case LL:
		pr.flagged = flaggedPrims{cl: cl, b: b, off: off, out: out, w: llWire{}}
		return &pr.flagged
	case LL128:
		pr.flagged = flaggedPrims{cl: cl, b: b, off: off, out: out, w: ll128Wire{}}
		return &pr.flagged
	}
	pr.simple = simplePrims{cl: cl, b: b, off: off, out: out, own: cl.r.peers[cl.r.rank].f32}
	return &pr.simple
}

// blockPrims holds one block's primitives of each kind, which newPrims resets for each
// chunk, the ring's step under way and the tree's steps (treeLinked: their links are set):
// a rank runs one collective at a time.
type blockPrims struct {
	simple     simplePrims
	flagged    flaggedPrims
	ringStep   step
	treeSteps  [2][2]step
	treeLinked bool
}

// writeSums hands the sums of message elements [x, x+len(sum)) to out, or where out is
// nil writes them to the call's output.
func (cl *call) writeSums(out func(x int, sum []float32), x int, sum []float32) {
	if out == nil {
		cl.writeOut(x, sum)
		return
	}
	out(x, sum)
}

// writeOut writes the sums of message elements [x, x+len(sum)) to the output, rounded
// once to a 16-bit dtype.
func (cl *call) writeOut(x int, sum []float32) {
	if cl.desc.t == dtype.F32 {
		copy(cl.outF32(x, len(sum)), sum)
	} else {
		vec.Narrow(cl.desc.t, cl.outU16(x, len(sum)), sum)
	}
}

// inputF32To copies input elements [x, x+len(dst)) into dst as f32.
func (cl *call) inputF32To(dst []float32, x int) {
	if cl.desc.t == dtype.F32 {
		copy(dst, cl.in.Float32s()[x:x+len(dst)])
	} else {
		vec.Widen(cl.desc.t, dst, cl.in.Uint16s()[x:x+len(dst)])
	}
}

// copyThrough is an all-reduce over one rank: block b's share of the chunk at off, copied.
func (cl *call) copyThrough(b device.Block, off, count int) {
	lo, hi := blockSpan(count, b)
	if cl.desc.t == dtype.F32 {
		copy(cl.outF32(off+lo, hi-lo), cl.in.Float32s()[off+lo:off+hi])
	} else {
		copy(cl.outU16(off+lo, hi-lo), cl.in.Uint16s()[off+lo:off+hi])
	}
}
