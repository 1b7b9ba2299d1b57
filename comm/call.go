package comm

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// Signal buffer layout, in 32-bit words: flags[set][block][slot], where slot p is written
// by rank p, then the tree all-reduce's flags, one line per block (see treeFlagBase), then
// the two-level all-reduce's (twoLevelFlagBase). A block's slots fill one cache line so
// blocks never share one. With at most stampOffset ranks, word stampOffset+p of a
// barrier's line holds the stamp (callStamp) of the call rank p last met there with one.
const (
	slotStride  = 16
	stampOffset = slotStride / 2
	signalWords = 4 * MaxBlocks * slotStride
)

// callDesc identifies one collective call; ranks compare theirs to catch mismatches.
type callDesc struct {
	seq   uint64
	op    string
	algo  Algo
	proto Proto // LL or LL128 where the algorithm runs one; ProtoAuto for Simple or none
	t     dtype.DType
	count int
}

func (d *callDesc) String() string {
	return fmt.Sprintf("%s %v count %d (%v)", d.op, d.t, d.count, Choice{d.algo, d.proto})
}

// call is one collective call of one rank while its kernel runs.
type call struct {
	r     *Rank
	desc  callDesc
	tag   uint64 // desc's tag as the control buffer publishes it
	wire  Wire   // the format inputs travel in (callWire)
	in    *device.Buffer
	out   *device.Buffer
	start int64 // the rank's call clock when the call began (callClock.now)

	verified [MaxBlocks]bool // per block: the peers' calls were compared with this one
	reg      *graphInput     // set when captured with an input peers can read in place

	lamportPhase int // flag-free phase (0..2) of the chunk that runs now
	lamportPrev  int // words the chunk before it wrote, which this one clears
	staged       int // where the chunk's inputs go: an alternating one-shot's half of the staging or push buffer
	// pushStride is set where the ranks pushed their inputs into every rank's push buffer
	// (an alternating one-shot): rank p's are region p, of pushStride elements, of the
	// half at staged of this rank's own.
	pushStride int

	waited time.Duration // block 0's time blocked on peers, this call so far
	where  string        // what block 0 last blocked on

	fault     FaultKind // injected into this call (Config.Fault); 0 for none
	corrupted bool      // block 0 wrote its corrupt flag (FaultCorrupt)
	// recorded is set while the flight recorder holds this run of the call: a replay whose
	// kernels a failure skipped (epilogue without prologue) must not mark the record of
	// the previous run, which finished, as failed.
	recorded bool
	// openLate says the record opens once the call's flags are out (openRecord, at its
	// first barrier), not in its prologue: for a call of one barrier, whose bookkeeping
	// then runs while the flags travel to the peers instead of before they leave.
	openLate bool
}

// begin runs as the prologue of the call's first kernel. The sequence number is taken
// here, on the rank's stream, not when the host enqueues: a call captured into a graph
// runs again at every replay and must take a new number each time. It publishes the call
// for the peers' mismatch checks and records it, or with late leaves the record to the
// call's first barrier (openLate).
func (cl *call) begin(late bool) error {
	r := cl.r
	cl.desc.seq = r.seq
	r.seq++
	// Only this process's failure: the peers' failure words were read when the call was
	// enqueued, and a peer that failed since ends the call's first wait that does not pass
	// at once (aborted).
	if p := r.c.failed.Load(); p != nil {
		return fmt.Errorf("comm: rank %d seq %d %v: %w: %v", r.rank, cl.desc.seq, &cl.desc, ErrFailed, *p)
	}
	cl.fault, cl.corrupted = r.c.cfg.Fault.next(r.rank), false
	cl.publish()
	clear(cl.verified[:])
	// a call with a fault injected keeps its record from the start: the fault strikes
	// before the barrier
	cl.waited, cl.where, cl.openLate = 0, "", late && cl.fault == 0
	if !cl.openLate {
		cl.openRecord()
	}
	return nil
}

// openRecord takes the call's start from the clock and opens its record.
func (cl *call) openRecord() {
	cl.openLate = false
	cl.start = cl.r.clock.now()
	cl.r.rec.open(&cl.desc, cl.start, cl.fault)
	cl.recorded = true
}

// beginChunk runs as the prologue of each chunk's kernel: the algorithm's, where its row
// has one.
func (cl *call) beginChunk(count int) {
	if s, ok := cl.desc.algo.spec(); ok && s.beginChunk != nil {
		s.beginChunk(cl, count)
	}
}

// end runs as the kernel's epilogue. A rank whose call failed fails the communicator, so
// that its peers stop waiting for it at once instead of at their deadline.
func (cl *call) end(err error) {
	if cl.openLate { // the call failed before its barrier: it is recorded all the same
		cl.openRecord()
	}
	now := cl.r.clock.now()
	if err != nil {
		cl.r.c.fail(cl.r, cl.desc.seq, err)
	}
	if !cl.recorded {
		return
	}
	cl.recorded = false
	if err != nil {
		cl.recordLast(Failed)
	} else {
		cl.recordLast(Done)
	}
	cl.r.rec.close(cl.desc.seq, now, cl.waited, err)
}

// barrier is vLLM's per-block barrier: the block bumps its private counter, writes the new
// value into its slot on every peer, and waits until every peer's slot on this rank holds
// the same value. Two alternating flag sets let a fast rank enter the next barrier while a
// slow one still polls this one. A rank neither writes nor reads its own slot: its line on
// this rank then has only remote writers, and the waiter's polls are not interleaved with
// a store of its own that would pull the line back from a writer in another process.
func (cl *call) barrier(b device.Block, what string) error {
	if _, err := cl.meet(b, what, 0); err != nil {
		return err
	}
	return cl.verify(b, true)
}

// meet is a barrier without the check of the peers' calls: it returns the offset of the
// flag line it met on. A nonzero stamp (callStamp) is written beside the flag, in the same
// line, so that the waiter learns which call a peer's flag comes from with the flag itself.
func (cl *call) meet(b device.Block, what string, stamp uint32) (base int, err error) {
	r := cl.r
	r.counter[b.Index]++
	v := r.counter[b.Index]
	base = (int(v&1)*MaxBlocks + b.Index) * slotStride
	w := v // what the peers get
	if cl.fault == FaultCorrupt && b.Index == 0 && !cl.corrupted {
		cl.corrupted, w = true, v+2 // a wrong epoch: the set's value two barriers on
	}
	// Release stores: the flags leave while the record opens, and one fence, not a locked
	// store per flag, orders them before ringPeers looks for sleepers (device/memorder.go).
	for p := range r.c.n {
		if p != r.rank {
			if stamp != 0 {
				device.StoreRelease32(&r.peers[p].flags[base+stampOffset+r.rank], stamp)
			}
			device.StoreRelease32(&r.peers[p].flags[base+r.rank], w)
		}
	}
	if cl.openLate {
		cl.openRecord()
	}
	if r.c.n > 1 {
		device.Fence()
		cl.ringPeers()
	}
	mine := r.peers[r.rank].flags[base : base+r.c.n]
	ready := func() bool {
		for p := range mine {
			if p != r.rank && atomic.LoadUint32(&mine[p]) != v {
				return false
			}
		}
		return true
	}
	err = cl.wait(b, what, ready, func() bool { return badFlag(mine, r.rank, v) >= 0 })
	if err == nil {
		return base, nil
	}
	if p := badFlag(mine, r.rank, v); p >= 0 {
		err = fmt.Errorf("rank %d wrote %#x into its flag on rank %d, want %#x: %w", p, atomic.LoadUint32(&mine[p]), r.rank, v, ErrCorruptFlag)
	}
	var missing []int
	for p := range mine {
		if p != r.rank && atomic.LoadUint32(&mine[p]) != v {
			missing = append(missing, p)
		}
	}
	return base, cl.waitError(b, what, missing, err)
}

// badFlag returns the first rank other than self whose flag in a barrier's slots holds
// neither v (it arrived) nor the value the slot held before (v-2, or 0 before the set's
// first use), or -1. Nothing else can be there: a peer writes v+2 into the slot only after
// passing the barrier between, which needs this rank.
func badFlag(slots []uint32, self int, v uint32) int {
	for p := range slots {
		if f := atomic.LoadUint32(&slots[p]); p != self && f != v && f != v-2 && (f != 0 || v >= 2) {
			return p
		}
	}
	return -1
}

// ErrCorruptFlag is wrapped by the error of a barrier that found a peer's flag holding a
// value that no barrier writes there.
var ErrCorruptFlag = errors.New("corrupted peer flag")

// wait blocks block b until ready() holds, with the communicator's deadline, and adds block
// 0's time blocked to the call's record: how long this rank sat waiting for its peers, the
// skew between ranks rather than the exchange itself (every block waits alike, so one
// block's time stands for the kernel's), and what it waits for, as the record's Where. A
// wait also ends early once bad (if set) holds.
//
// Block 0 first checks ready (readySoon) without reading the clock or touching the record:
// a call that waits no longer than that counts as no wait.
func (cl *call) wait(b device.Block, what string, ready, bad func() bool) error {
	aborted := func() bool { return cl.aborted(b) || bad != nil && bad() }
	bell := cl.r.peers[cl.r.rank].bell
	if b.Index != 0 {
		return bell.WaitUntil(cl.r.c.cfg.Timeout, aborted, ready)
	}
	if bell.readySoon(ready) {
		return nil
	}
	if cl.where != what {
		cl.where = what
		cl.r.rec.setWhere(cl.desc.seq, what)
	}
	clock := &cl.r.clock
	start := clock.now()
	err := bell.WaitUntil(cl.r.c.cfg.Timeout, aborted, ready)
	cl.waited += clock.since(start)
	return err
}

// ringPeers wakes peers that block waiting for this rank's writes.
func (cl *call) ringPeers() {
	for p := range cl.r.c.n {
		if p != cl.r.rank {
			cl.r.ringPeer(p)
		}
	}
}

// aborted reports whether a wait of this call should give up early: another block of the
// kernel failed, the communicator or any rank failed, or a peer issued a different call
// under the same sequence number.
func (cl *call) aborted(b device.Block) bool {
	return b.Aborted() || cl.r.c.failed.Load() != nil || cl.r.anyFailed() || cl.mismatch() != nil
}

// verify compares the peers' calls with this one once per block, after a wait that every
// peer passed (so each has published its call); after a barrier it also checks that no peer
// is ahead. A mismatch fails the communicator.
func (cl *call) verify(b device.Block, barrier bool) error {
	if cl.verified[b.Index] {
		return nil
	}
	cl.verified[b.Index] = true
	err := cl.mismatch()
	if err == nil && barrier {
		err = cl.ahead()
	}
	if err != nil {
		return cl.fail(err)
	}
	return nil
}

// ahead returns an error when a peer already began the call after this one while this rank
// passes this one's first barrier. No peer can, legitimately: a barrier-based call passes at
// least two barriers per block, and a peer cannot pass the second before this rank writes
// it. A peer that is ahead skipped this call, and its next call's barrier was taken for this
// one's.
func (cl *call) ahead() error {
	next := cl.desc.seq + 1
	for p := range cl.r.c.n {
		if !tagOf(cl.r.publishedTag(p, next), next) {
			continue
		}
		desc := "(call unknown)"
		if w := (descWords{}); cl.r.publishedCall(p, next, &w) {
			d := w.decode(next)
			desc = d.String()
		}
		return fmt.Errorf("comm: rank %d seq %d %v: rank %d already began seq %d %s, so it skipped seq %d",
			cl.r.rank, cl.desc.seq, &cl.desc, p, next, desc, cl.desc.seq)
	}
	return nil
}

// mismatch returns an error when a peer's call with this sequence number differs: its tag
// says so in one word, its slot then says how.
func (cl *call) mismatch() error {
	seq := cl.desc.seq
	for p := range cl.r.c.n {
		tag := cl.r.publishedTag(p, seq)
		if tag == cl.tag || !tagOf(tag, seq) {
			continue // the same call, or p has not published this one yet
		}
		var w, mine descWords
		if cl.desc.encode(&mine); !cl.r.publishedCall(p, seq, &w) || w.sameCall(&mine) {
			continue
		}
		d := w.decode(seq)
		return fmt.Errorf("comm: collective mismatch at seq %d: rank %d issued %v, rank %d issued %v",
			seq, cl.r.rank, &cl.desc, p, &d)
	}
	return nil
}

// waitError turns a failed wait into the error the rank returns, and marks the communicator
// failed so that every other rank stops waiting too.
func (cl *call) waitError(b device.Block, what string, missing []int, cause error) error {
	r := cl.r
	prefix := cl.locate(b, what)
	switch {
	case errors.Is(cause, device.ErrDeadline):
		return cl.fail(fmt.Errorf("%s: rank(s) %v did not arrive within %v: %w", prefix, missing, r.c.cfg.Timeout, cause))
	case cl.mismatch() != nil:
		return cl.fail(fmt.Errorf("%s: %w", prefix, cl.mismatch()))
	case errors.Is(cause, ErrCorruptFlag):
		return cl.fail(fmt.Errorf("%s: %w", prefix, cause))
	case r.c.Err() != nil:
		return fmt.Errorf("%s: %w: %v", prefix, ErrFailed, r.c.Err())
	default: // a sibling block failed; the kernel reports that block's error
		return fmt.Errorf("%s: %w", prefix, cause)
	}
}

// locate records where block b of the call is (what it waits for, as Record.Where says) and
// returns the prefix of its errors: the rank, the sequence number, the call, the block and
// that place.
func (cl *call) locate(b device.Block, what string) string {
	where := fmt.Sprintf("block %d %s", b.Index, what)
	if b.Index == 0 {
		where = what
	}
	cl.r.rec.setWhere(cl.desc.seq, where)
	return fmt.Sprintf("comm: rank %d seq %d %v block %d %s", cl.r.rank, cl.desc.seq, &cl.desc, b.Index, what)
}

// fail makes err, which this call detected, the communicator's failure (unless another
// came first) and returns it with what every rank last did.
func (cl *call) fail(err error) error {
	err = cl.r.c.withFlight(err)
	cl.r.c.fail(cl.r, cl.desc.seq, err)
	return err
}

// blockSpan splits n elements among the grid's blocks: block i gets [lo, hi). Bounds are
// multiples of 16 elements (whole cache lines for f32) except the end.
func blockSpan(n int, b device.Block) (lo, hi int) {
	return splitPoint(n, b.Grid, b.Index), splitPoint(n, b.Grid, b.Index+1)
}

func splitPoint(n, parts, i int) int { return splitAligned(n, parts, i, 16) }

// splitAligned is the i-th of parts near-even split points of n, rounded down to a
// multiple of g (a power of two); n from i = parts on.
func splitAligned(n, parts, i, g int) int {
	if i >= parts {
		return n
	}
	return min(n, (n/parts*i+min(i, n%parts))&^(g-1))
}

func fmtRankErr(r int, what string, err error) error {
	return fmt.Errorf("comm: rank %d: %s: %w", r, what, err)
}
