package comm

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/tpslice/tpslice/device"
)

// The LL and LL128 protocols push: a sender writes each step's data, flags inside, into a
// slot of the receiver's protocol buffer, and the receiver polls its own buffer. The buffer
// holds, per protocol and block, two halves of protoSlots(n) slots of slotWordsFor 64-bit
// words: one slot per step of a piece (the ring's 2(n-1) steps; the tree's partial sums from
// up to two children and the sums from the parent, per tree), a piece being as many
// elements per step as a slot carries.
//
// Why no reset and no credits are needed: a block's pieces are numbered per protocol, the
// same on every rank (every rank runs the same calls, chunks, grids and pieces), and piece
// u uses half u mod 2 with flag 1 + u mod (2^32-2) (never 0, and of u's parity). A rank writes piece u+2 into a peer's half only after
// it finished piece u+1, whose result holds every rank's input, so every rank had begun
// piece u+1 and thus finished reading piece u, the last user of that half. A slot
// therefore holds this piece's flag (its data arrived), an older flag of the same parity,
// or 0 (never written); anything else is corrupt. Flags wrap after 2^32-2 pieces, the
// comparisons modulo 2^32 with them, and no rank is ever more than two pieces from its
// peers, so the wrap is harmless. LL and LL128 have regions (and piece numbers) of their own, so one never
// reads the other's layout.
//
// A slot is as large as a budget of protoBudget bytes per rank allows, so that a block's
// share of a message goes through in few pieces: each piece is a round trip around the
// ring or up and down the trees.
func slotWordsFor(n, blocks int) int {
	const protoBudget = 8 << 20
	words := protoBudget / (8 * 2 * blocks * 2 * protoSlots(n))
	return min(max(1<<(bits.Len(uint(words))-1), 512), 8192)
}

// protoSlots is how many slots one half of a block's region holds for n ranks.
func protoSlots(n int) int { return max(2*(n-1), treeSlots) }

// protoIndex numbers the protocols that own a region of the protocol buffer.
func protoIndex(p Proto) int {
	if p == LL128 {
		return 1
	}
	return 0
}

// protoWords is the 64-bit words of a rank's protocol buffer: two protocols' regions of
// two halves of protoSlots slots per block.
func protoWords(n, blocks, slotWords int) int {
	return 2 * blocks * 2 * protoSlots(n) * slotWords
}

// slot is one slot of a rank's protocol buffer, as 64-bit words and as f32 (LL128 copies
// its data as f32 and keeps its flags in whole words).
type slot struct {
	u64 []uint64
	f32 []float32
}

// wire is a protocol's encoding of one step's data in a slot.
type wire interface {
	proto() Proto
	// elems is how many f32 elements a slot of words carries.
	elems(words int) int
	// put writes src into s with flag, the data before (or with) the flag.
	put(s slot, src []float32, flag uint32)
	// take copies into dst the elements of s from element from on whose flag is flag, up
	// to the first whose flag is not, and returns how far it got.
	take(s slot, dst []float32, from int, flag uint32) int
	// flagOf returns the flag that element i of s carries now.
	flagOf(s slot, i int) uint32
}

// piece is one block's current piece of an LL or LL128 call: its flag and its half.
type piece struct {
	w    wire
	flag uint32
	half int
}

// nextPiece numbers the block's next piece with wire w (see slotWordsFor).
func (cl *call) nextPiece(w wire, b device.Block) piece {
	const period = 1<<32 - 2 // even, so that a flag keeps its half's parity across the wrap
	u := &cl.r.pieces[protoIndex(w.proto())][b.Index]
	pc := piece{w: w, flag: 1 + uint32(*u%period), half: int(*u & 1)}
	*u++
	return pc
}

// slotOf is slot i of the piece's half of block b on rank p, as this rank maps it.
func (cl *call) slotOf(pc piece, p int, b device.Block, i int) slot {
	return cl.r.protoSlot(p, pc.w.proto(), b.Index, pc.half, i)
}

// protoSlot is slot i of half h of block b's region for protocol pr on rank p, as rank r
// maps it.
func (r *Rank) protoSlot(p int, pr Proto, b, h, i int) slot {
	words := r.c.slotWords
	base := (((protoIndex(pr)*r.c.cfg.Blocks+b)*2+h)*protoSlots(r.c.n) + i) * words
	v := &r.peers[p]
	return slot{u64: v.protoU64[base : base+words], f32: v.protoF32[2*base : 2*(base+words)]}
}

// send writes src into slot i of the piece on rank p and wakes p. Under FaultCorrupt,
// block 0 writes once the flag of two pieces ahead, which no writer can have left there.
func (cl *call) send(pc piece, p int, b device.Block, i int, src []float32) {
	flag := pc.flag
	if cl.fault == FaultCorrupt && b.Index == 0 && !cl.corrupted && len(src) > 0 {
		cl.corrupted, flag = true, pc.flag+2
	}
	pc.w.put(cl.slotOf(pc, p, b, i), src, flag)
	cl.r.ringPeer(p)
}

// receive fills dst from slot i of the piece on this rank, which rank from writes, checking
// every element's flag. It waits on the step's last element first: a sender writes in
// order, so that is one wait per step instead of one per element the receiver catches up
// with (which, with ranks time-sharing few cores, is a wake-up each). what names the step
// in errors.
func (cl *call) receive(pc piece, from int, b device.Block, i int, dst []float32, what string) error {
	s := cl.slotOf(pc, cl.r.rank, b, i)
	for got := pc.w.take(s, dst, 0, pc.flag); got < len(dst); got = pc.w.take(s, dst, got, pc.flag) {
		at := len(dst) - 1
		if pc.w.flagOf(s, at) == pc.flag {
			at = got // the end is there: what is missing lies before it
		}
		f := pc.w.flagOf(s, at)
		if f == pc.flag {
			continue // it arrived since take looked
		}
		if !staleFlag(f, pc.flag) {
			return cl.fail(fmt.Errorf("%s: rank %d wrote %#x into its %v flag on rank %d, want %#x: %w",
				cl.locate(b, what), from, f, pc.w.proto(), cl.r.rank, pc.flag, ErrCorruptFlag))
		}
		changed := func() bool { return pc.w.flagOf(s, at) != f }
		if err := cl.wait(b, what, changed, nil); err != nil {
			return cl.waitError(b, what, cl.notEntered(b, from), err)
		}
	}
	return nil
}

// staleFlag reports whether f may legitimately sit in a slot that waits for want: 0, or
// an earlier flag of the same half (same parity, lower).
func staleFlag(f, want uint32) bool {
	d := int32(f - want)
	return f == 0 || d < 0 && d%2 == 0
}

// The entered word of a block (see treeFlagBase) says which call the block last entered:
// the ring and the tree write it under every protocol, so that a deadline names the ranks
// that never arrived and a peer that skipped a call is told from one that is on time.

// enter publishes that block b entered this call.
func (cl *call) enter(b device.Block) {
	atomic.StoreUint32(cl.enteredWord(cl.r.rank, b), uint32(cl.desc.seq)+1)
}

// enteredWord is rank p's entered word of block b, as this rank maps it.
func (cl *call) enteredWord(p int, b device.Block) *uint32 {
	return cl.treeFlag(p, b, treeEntered)
}

// sameCall fails the call when rank p, whose data for this piece arrived, is in another
// call: one of the two skipped a call. Callers ask only where p cannot have left the call
// yet (it needs this rank's data of the same piece to finish).
func (cl *call) sameCall(b device.Block, p int, what string) error {
	if e := atomic.LoadUint32(cl.enteredWord(p, b)); e != uint32(cl.desc.seq)+1 {
		return cl.fail(fmt.Errorf("%s: %w", cl.locate(b, what), cl.skipped(p, e)))
	}
	return nil
}

// notEntered returns the ranks whose block b has not entered this call, or, when all
// have, the peers the block waits for.
func (cl *call) notEntered(b device.Block, waitsFor ...int) []int {
	var ranks []int
	for p := range cl.r.c.n {
		if atomic.LoadUint32(cl.enteredWord(p, b)) != uint32(cl.desc.seq)+1 {
			ranks = append(ranks, p)
		}
	}
	if len(ranks) == 0 {
		ranks = waitsFor
	}
	return ranks
}
