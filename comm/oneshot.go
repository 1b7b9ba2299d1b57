package comm

import (
	"fmt"
	"sync/atomic"

	"github.com/tpslice/tpslice/device"
)

// oneShot: every rank copies its input into its registered buffer; barrier; every rank
// reads all n inputs and sums them in rank order (so every rank gets the same bits);
// barrier, before the buffer can be reused. Each rank reads (n-1)·S; two barriers.
//
// An alternating call (alternates) drops the second barrier. Where its copies to the peers
// come to at most pushLimit bytes, it pushes its input into its region of every peer's push
// buffer (and of its own only where its output overlaps its input, which the sum then
// cannot read in place), in the half its sequence number's parity names: the next
// alternating call writes the other half, and that call's barrier proves every peer done reading this one's (a peer
// writes it only after its sum). Pushed, the inputs are in the reader's memory when the
// flags say so; pulled, each reader still fetches them from the writers' caches after the
// flags came, a second crossing (docs/benchmarks/processes.md, eighth session). No other
// kernel touches the push buffer, and each rank writes only its own region, whatever call
// it makes, so a peer that issued another call cannot write what this rank reads.
// A larger chunk stages into the half of the rank's own staging buffer, which its peers
// read; any other kernel then first meets the barrier this call left out (settle). Either
// way the flag carries the call's stamp in the same line, which replaces the reads of the
// peers' published descriptors (verify) by one compare for each peer.
func (cl *call) oneShot(b device.Block, off, n int) error {
	lo, hi := cl.span(n, b)
	if !cl.alternates(n, b.Grid) {
		cl.stage(off, lo, hi)
		if err := cl.barrier(b, "one-shot inputs staged"); err != nil {
			return err
		}
		cl.sumInputs(off, lo, hi, off+lo, cl.out.Float32s(), cl.out.Uint16s())
		return cl.barrier(b, "one-shot inputs read")
	}
	half := int(cl.desc.seq & 1)
	if size := cl.desc.t.Size(); (cl.r.c.n-1)*n*size <= pushLimit {
		cl.staged, cl.pushStride = half*cl.r.c.n*pushLimit/size, pushLimit/size
		cl.push(off, lo, hi)
	} else { // a graph's replay runs the same call again: nothing of a push may stay
		cl.staged, cl.pushStride = half*cl.halfStaging(), 0
		cl.stage(off, lo, hi)
	}
	base, err := cl.meet(b, "one-shot inputs staged", cl.stamp())
	if err == nil {
		err = cl.verifyStamps(b, base)
	}
	if err != nil {
		return err
	}
	cl.sumInputs(off, lo, hi, off+lo, cl.out.Float32s(), cl.out.Uint16s())
	cl.r.unread = cl.pushStride == 0 // staged: the peers read this rank's buffer until they meet again
	return nil
}

// alternates reports whether a one-shot chunk of n elements on grid blocks runs with one
// barrier: one block (the rank's pending barrier is block 0's), staged exactly (not in
// place, nor encoded), in half the staging buffer, among at most stampOffset ranks. Every
// rank decides alike: nothing here differs between ranks.
func (cl *call) alternates(n, grid int) bool {
	r := cl.r
	return grid == 1 && r.c.n > 1 && r.c.n <= stampOffset && cl.wire == WireExact &&
		!cl.registered() && n <= cl.halfStaging()
}

// pushLimit is the most a one-shot chunk pushes, in bytes: its n-1 copies to the peers. A
// push saves the readers a crossing, which is most of a small call's time; a larger one is
// bound by bandwidth, where remote stores, a line fetched for ownership each, lose to the
// readers' streamed loads (in one process, 64 KiB at 2 ranks took twice as long pushed,
// docs/benchmarks/processes.md, eighth session). It is also each rank's region of a half of
// the push buffer, which therefore holds any pushed chunk.
const pushLimit = 4 << 10

// pushBytes is the size of a rank's push buffer among ranks ranks: two halves of a region
// per rank.
func pushBytes(ranks int) int { return 2 * ranks * pushLimit }

// push copies input elements [off+lo, off+hi) into region cl.r.rank (of cl.pushStride
// elements) of every rank's push buffer half at cl.staged; of its own only where the sum
// cannot read the input in place (ownInPlace).
func (cl *call) push(off, lo, hi int) {
	r := cl.r
	at := cl.staged + r.rank*cl.pushStride
	own := cl.ownInPlace()
	for p := range r.c.n {
		if p != r.rank || !own {
			cl.copyInput(r.peers[p].pushF32, r.peers[p].pushU16, at, off, lo, hi)
		}
	}
}

// ownInPlace reports whether a pushing rank's sum reads its own input where it is rather
// than from its own push region: it can unless the output, which the sum writes, overlaps
// the input.
func (cl *call) ownInPlace() bool { return !device.Overlaps(cl.in, cl.out) }

// halfStaging is half the staging buffer, in the call's elements.
func (cl *call) halfStaging() int { return cl.r.c.cfg.BufferBytes / 2 / cl.desc.t.Size() }

// stamp is the 32-bit word an alternating call writes beside its barrier flag: its tag
// folded (the sequence number and the digest of its description), never 0, which the
// flag lines start with.
func (cl *call) stamp() uint32 { return stampOf(cl.tag) }

// stampOf folds a published tag into a stamp.
func stampOf(tag uint64) uint32 { return (uint32(tag>>32) ^ uint32(tag)) | 1 }

// verifyStamps checks, after an alternating call's barrier on the line at base, that every
// peer's flag came from this call: a peer that skipped the call, or issued another, left
// another stamp, and is then named as verify names it.
func (cl *call) verifyStamps(b device.Block, base int) error {
	r, want := cl.r, cl.stamp()
	stamps := r.peers[r.rank].flags[base+stampOffset : base+stampOffset+r.c.n]
	for p := range stamps {
		got := atomic.LoadUint32(&stamps[p])
		if p == r.rank || got == want {
			continue
		}
		err := cl.mismatch()
		if err == nil {
			err = cl.ahead()
		}
		if err == nil && cl.desc.seq > 0 && got == stampOf(r.publishedTag(p, cl.desc.seq-1)) {
			// p met this barrier in the call before this one, which this rank cannot have
			// passed without p: this rank skipped it
			err = fmt.Errorf("comm: rank %d seq %d %v: rank %d already began seq %d %v, so it skipped seq %d",
				r.rank, cl.desc.seq, &cl.desc, r.rank, cl.desc.seq, &cl.desc, cl.desc.seq-1)
		}
		if err == nil {
			err = fmt.Errorf("comm: rank %d seq %d %v: rank %d met its barrier with stamp %#x, want %#x", r.rank, cl.desc.seq, &cl.desc, p, got, want)
		}
		return cl.fail(err)
	}
	cl.verified[b.Index] = true
	return nil
}

// settle meets the barrier an alternating one-shot that staged its inputs left out,
// before a kernel that is not the next alternating one-shot (alternate false) may write the
// staging buffer the peers may still read. It runs in the kernel's prologue, before any
// block. One that pushed them leaves nothing to meet: no peer reads this rank's buffers.
func (cl *call) settle(alternate bool) error {
	r := cl.r
	if !r.unread || alternate {
		return nil
	}
	r.unread = false
	_, err := cl.meet(device.Block{Grid: 1}, "previous one-shot's inputs read", 0)
	return err
}
