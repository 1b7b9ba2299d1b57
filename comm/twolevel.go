package comm

import (
	"fmt"
	"sync/atomic"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// The two-level flags of block b live in one cache line of each rank's signal buffer,
// after the tree's, and only their owner writes them: the sequence number (+1) of the call
// the block last entered, then the epoch (two-level chunks of the block so far, counted
// from the communicator's start) whose inputs it has staged, whose host slice it has
// reduced, and whose slice it has summed across hosts.
const (
	twoLevelFlagBase = 3 * MaxBlocks * slotStride
	tlEntered        = 0
	tlStaged         = 1
	tlPartial        = 2
	tlFinal          = 3
)

const (
	tlStagedWhat  = "two-level inputs staged"
	tlPartialWhat = "two-level host slices reduced"
	tlFinalWhat   = "two-level slices summed across hosts"
)

// twoLevel is the hierarchical all-reduce of a node of H hosts of L ranks each, the shape
// of Horovod's hierarchical all-reduce (reduce-scatter inside the node, all-reduce across,
// all-gather inside) and of NCCL's across nodes (reduce inside, exchange over the network,
// broadcast inside): the chunk is cut into L slices, and for rank (h, l) — local index l
// on host h —
//
//  1. reduce-scatter inside the host: every rank stages its input in its staging buffer
//     (as f32, so bf16 rounds once, at the end); rank (h, l) sums slice l over its host's
//     ranks, in local order, in place in its own staging buffer (nobody else reads slice l
//     of it): the host's partial sum of slice l;
//  2. all-reduce across hosts, among the ranks of rail l (local index l on every host,
//     each behind its own NIC): rank (h, l) reads the H partial sums of slice l and adds
//     them in host order into its tmp buffer;
//  3. all-gather inside the host: every rank copies slice p from rank (h, p)'s tmp buffer.
//
// Each element of the result is thus Σ_h (Σ_l in(h, l)), the same order on every rail
// member, so every rank gets the same bits (f32 throughout, one rounding for bf16), and
// the same bits on every call. Step 2 is the direct exchange, not a ring or tree over the
// hosts: with H = 2, the case of TP across two 8-GPU hosts, each rank sends and receives
// S/L — what a ring over two hosts moves, in one step instead of two — and TP groups span
// few hosts; NCCL's rings and trees across nodes are for many, where H-1 copies of S/L per
// rank would cost more than 2(H-1) hops. Only step 2 crosses hosts: each rank moves
// (H-1)·S/L bytes over InfiniBand and 2(L-1)/L·S inside its host.
//
// Synchronisation is point to point, through the flags above (no barrier over every rank,
// which would cross hosts twice): a rank waits for its host's staged flags before step 1,
// its rail's partial flags before step 2, and the final flags of its host and rail before
// step 3 and leaving. That leaves every buffer of this call free when the rank leaves it:
// its host read its staging buffer before their partial flags, its rail before their
// final ones. Its tmp buffer it writes only in step 2, after its rail's partial flags,
// each raised after the flagging rail rank's host entered this call: so every rank has left
// the call before, which may have read it (two-shot's all-gather does).
func (cl *call) twoLevel(b device.Block, off, count int) error {
	r := cl.r
	lay := &r.c.layout
	s := twoLevelState{cl: cl, b: b, entered: uint32(cl.desc.seq) + 1,
		host: lay.hosts[lay.host[r.rank]], rail: lay.rails[lay.local[r.rank]]}
	r.twoLevelEpoch[b.Index]++
	s.epoch = r.twoLevelEpoch[b.Index]
	atomic.StoreUint32(s.flag(r.rank, tlEntered), s.entered)

	own := r.peers[r.rank]
	L := len(s.host)
	for p := range L {
		lo, hi := hostSlice(count, L, p, b)
		if cl.desc.t == dtype.F32 {
			copy(own.f32[lo:hi], cl.in.Float32s()[off+lo:off+hi])
		} else {
			vec.Widen(cl.desc.t, own.f32[lo:hi], cl.in.Uint16s()[off+lo:off+hi])
		}
	}
	s.publish(tlStaged, s.epoch)
	if err := s.await(s.host, tlStaged, tlStagedWhat, true); err != nil {
		return err
	}
	lo, hi := hostSlice(count, L, lay.local[r.rank], b)
	var srcs [device.MaxNodeDevices][]float32
	for i, p := range s.host {
		srcs[i] = r.peers[p].f32[lo:hi]
	}
	vec.SumF32(own.f32[lo:hi], srcs[:L])
	partial := s.epoch
	if cl.fault == FaultCorrupt && b.Index == 0 && !cl.corrupted {
		cl.corrupted, partial = true, s.epoch+2 // an epoch this call never reaches
	}
	s.publish(tlPartial, partial)

	if err := s.await(s.rail, tlPartial, tlPartialWhat, true); err != nil {
		return err
	}
	for i, p := range s.rail {
		srcs[i] = r.peers[p].f32[lo:hi]
	}
	vec.SumF32(own.tmpF32[lo:hi], srcs[:len(s.rail)])
	s.publish(tlFinal, s.epoch)

	if err := s.await(s.host, tlFinal, tlFinalWhat, false); err != nil {
		return err
	}
	if err := s.await(s.rail, tlFinal, tlFinalWhat, false); err != nil {
		return err
	}
	for i, p := range s.host {
		lo, hi := hostSlice(count, L, i, b)
		if cl.desc.t == dtype.F32 {
			copy(cl.outF32(off+lo, hi-lo), r.peers[p].tmpF32[lo:hi])
		} else {
			vec.Narrow(cl.desc.t, cl.outU16(off+lo, hi-lo), r.peers[p].tmpF32[lo:hi])
		}
	}
	return cl.verify(b, false) // every peer's flags have come: each has published its call
}

// hostSlice is block b's share [lo, hi) of slice p of a chunk of count elements cut into
// parts slices (one per rank of a host).
func hostSlice(count, parts, p int, b device.Block) (lo, hi int) {
	s0, s1 := splitPoint(count, parts, p), splitPoint(count, parts, p+1)
	lo, hi = blockSpan(s1-s0, b)
	return s0 + lo, s0 + hi
}

// twoLevelState is one block's view of one chunk of a two-level all-reduce.
type twoLevelState struct {
	cl         *call
	b          device.Block
	entered    uint32 // the entered word of this call
	epoch      uint32 // the chunk's epoch for this block
	host, rail []int  // the ranks this rank exchanges with, itself included
}

// flag is rank p's two-level flag word of the block, as this rank maps it.
func (s *twoLevelState) flag(p, word int) *uint32 {
	return &s.cl.r.peers[p].flags[twoLevelFlagBase+s.b.Index*slotStride+word]
}

// publish raises the rank's flag word to v and wakes the peers.
func (s *twoLevelState) publish(word int, v uint32) {
	atomic.StoreUint32(s.flag(s.cl.r.rank, word), v)
	s.cl.ringPeers()
}

// await waits until every rank of ranks has raised its flag word to this chunk's epoch.
func (s *twoLevelState) await(ranks []int, word int, what string, inCall bool) error {
	cl := s.cl
	var bad error
	ready := func() bool {
		ok, err := s.ready(ranks, word, inCall)
		if err != nil {
			bad = err
		}
		return ok || err != nil
	}
	if !ready() {
		if err := cl.wait(s.b, what, ready, nil); err != nil {
			return cl.waitError(s.b, what, s.missing(ranks, word), err)
		}
	}
	if bad != nil {
		return cl.fail(fmt.Errorf("%s: %w", cl.locate(s.b, what), bad))
	}
	return nil
}

// ready reports whether every rank of ranks has raised word to the epoch. The only other
// value a flag can hold is the epoch before: no rank passes a chunk's flags without this
// rank's. inCall says the peer cannot have left the call yet, so that its entered word must
// be this call's: one that holds another skipped a call, and its next call's flags must
// not be taken for this one's. (A rank's final flag may be read after it left.)
func (s *twoLevelState) ready(ranks []int, word int, inCall bool) (bool, error) {
	me := s.cl.r.rank
	for _, p := range ranks {
		if p == me {
			continue
		}
		switch f := atomic.LoadUint32(s.flag(p, word)); {
		case f == s.epoch-1:
			return false, nil
		case f != s.epoch:
			return false, fmt.Errorf("rank %d wrote %#x into its two-level flag, rank %d waits for %#x: %w", p, f, me, s.epoch, ErrCorruptFlag)
		case inCall:
			if e := atomic.LoadUint32(s.flag(p, tlEntered)); e != s.entered {
				return false, s.cl.skipped(p, e)
			}
		}
	}
	return true, nil
}

// missing returns the ranks a deadline names: those whose block has not entered this call
// (it never arrived, or stalls or skipped it), else those of ranks still short of the epoch.
func (s *twoLevelState) missing(ranks []int, word int) []int {
	var out []int
	for p := range s.cl.r.c.n {
		if atomic.LoadUint32(s.flag(p, tlEntered)) != s.entered {
			out = append(out, p)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, p := range ranks {
		if atomic.LoadUint32(s.flag(p, word)) != s.epoch {
			out = append(out, p)
		}
	}
	return out
}
