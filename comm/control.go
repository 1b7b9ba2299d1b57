package comm

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// Every rank owns a control buffer, registered like its staging buffer, that holds what
// its peers must know of it besides data and flags: its doorbell, its failure, the call
// descriptors it published for mismatch checks and a record of its last collective. A peer
// reads them through its mapping only, never through the rank's Go state, so they work the
// same between goroutines and between processes. Layout, in 64-bit words, each group on a
// cache line of its own:
const (
	ctlBell      = 0  // device.SharedBellWords 32-bit words: the rank's waiters sleep here
	ctlFailure   = 8  // the failure word (setFailed)
	ctlMulticast = 16 // rank 0 only: the multicast object's two element counters
	ctlLast      = 24 // the last-collective word (recordLast): its seq and state
	ctlPublished = 32 // publishedDepth descriptor slots, the call of seq s in slot s mod depth
	ctlWords     = ctlPublished + publishedDepth*slotWords
)

// A descriptor slot is a call's description in slotWords words, written by its rank only,
// seqlock-style: the version word is odd while the fields change, so a reader that finds
// it odd or changed across its read of the fields does not use them.
const (
	slotVersion = 0
	slotSeq     = 1
	slotOp      = 2 // opWords words: the op's name, zero-padded
	slotKind    = slotOp + opWords
	slotCount   = slotKind + 1
	slotWords   = slotCount + 1
	opWords     = 4 // an op's name holds at most 8·opWords bytes
)

// descWords is a descriptor slot's words as a reader copied them.
type descWords [slotWords]uint64

// encode writes the call's description into w, all but the version.
func (d *callDesc) encode(w *descWords) {
	clear(w[:])
	w[slotSeq] = d.seq
	var name [8 * opWords]byte
	copy(name[:], d.op)
	for i := range opWords {
		for j := range 8 {
			w[slotOp+i] |= uint64(name[8*i+j]) << (8 * j)
		}
	}
	w[slotKind] = uint64(d.algo) | uint64(d.proto)<<8 | uint64(d.t)<<16
	w[slotCount] = uint64(d.count)
}

// decode is encode's inverse.
func (w *descWords) decode() callDesc {
	var name [8 * opWords]byte
	for i := range opWords {
		for j := range 8 {
			name[8*i+j] = byte(w[slotOp+i] >> (8 * j))
		}
	}
	k := w[slotKind]
	return callDesc{
		seq: w[slotSeq], op: strings.TrimRight(string(name[:]), "\x00"),
		algo: Algo(k), proto: Proto(k >> 8), t: dtype.DType(k >> 16), count: int(w[slotCount]),
	}
}

// sameCall reports whether two slots describe the same call: the same op, algorithm,
// protocol, dtype and count (sequence numbers aside).
func (w *descWords) sameCall(o *descWords) bool {
	return w[slotOp] == o[slotOp] && w[slotOp+1] == o[slotOp+1] && w[slotOp+2] == o[slotOp+2] &&
		w[slotOp+3] == o[slotOp+3] && w[slotKind] == o[slotKind] && w[slotCount] == o[slotCount]
}

// storeSlot publishes w in slot s (the writer is the slot's rank alone).
func storeSlot(s []uint64, w *descWords) {
	v := atomic.LoadUint64(&s[slotVersion])
	atomic.StoreUint64(&s[slotVersion], v+1) // odd: being written
	for i := slotSeq; i < slotWords; i++ {
		atomic.StoreUint64(&s[i], w[i])
	}
	atomic.StoreUint64(&s[slotVersion], v+2)
}

// loadSlot copies slot s into w and reports whether it holds a whole description: never
// written, being written (by a writer that may have died mid-way) or rewritten while this
// read it all say no, after a few tries.
func loadSlot(s []uint64, w *descWords) bool {
	for range 4 {
		v := atomic.LoadUint64(&s[slotVersion])
		if v == 0 {
			return false
		}
		if v&1 == 0 {
			for i := slotSeq; i < slotWords; i++ {
				w[i] = atomic.LoadUint64(&s[i])
			}
			if atomic.LoadUint64(&s[slotVersion]) == v {
				return true
			}
		}
		runtime.Gosched()
	}
	return false
}

// failCode says why a rank failed, as its failure word carries it to the peers.
type failCode uint8

// The causes a failure word names.
const (
	failOther    failCode = iota // an error of its own (a panicking kernel, a bad launch)
	failDeadline                 // a peer did not arrive in time
	failMismatch                 // a peer issued another call
	failCorrupt                  // a peer's flag held what no barrier writes
	failClosed                   // its communicator was closed
	failExited                   // its process ended (set by whoever watches it: MarkFailed)
)

func (f failCode) String() string {
	return [...]string{"failed", "timed out waiting for a peer", "found a collective mismatch",
		"found a corrupted peer flag", "closed its communicator", "its process exited"}[min(int(f), int(failExited))]
}

// codeOf classifies a failure for the failure word.
func codeOf(err error) failCode {
	switch {
	case errors.Is(err, ErrClosed):
		return failClosed
	case errors.Is(err, device.ErrDeadline):
		return failDeadline
	case errors.Is(err, ErrCorruptFlag):
		return failCorrupt
	case strings.Contains(err.Error(), "collective mismatch"):
		return failMismatch
	}
	return failOther
}

// The failure word: 0 while the rank is well, else failedBit, the code in the next byte and
// the sequence number of the failed call in the low 56 bits. It is set once.
const (
	failedBit = 1 << 63
	seqMask   = 1<<56 - 1
)

// setFailed sets the failure word of a control buffer, unless one is set already.
func setFailed(ctl []uint64, code failCode, seq uint64) {
	atomic.CompareAndSwapUint64(&ctl[ctlFailure], 0, failedBit|uint64(code)<<56|seq&seqMask)
}

// markExited sets the failure word of a rank whose process ended, in its last collective.
func markExited(ctl []uint64) {
	setFailed(ctl, failExited, atomic.LoadUint64(&ctl[ctlLast])&seqMask)
}

// failure returns rank p's failure, as its control buffer tells it, or nil.
func (v *peerView) failure(p int) error {
	w := atomic.LoadUint64(&v.ctl[ctlFailure])
	if w == 0 {
		return nil
	}
	seq, code := w&seqMask, failCode(w>>56&0x7f)
	last := "no collective started"
	if d, state, ok := v.lastCall(); ok {
		last = fmt.Sprintf("last collective seq %d %v, %v", d.seq, &d, state)
	}
	switch code {
	case failExited:
		return fmt.Errorf("comm: rank %d's process exited (%s)", p, last)
	case failClosed:
		return fmt.Errorf("comm: rank %d closed its communicator (%s)", p, last)
	}
	return fmt.Errorf("comm: rank %d failed in seq %d (%s): %v", p, seq, last, code)
}

// bell is what a rank's waiters sleep on and its peers ring once they wrote what it may
// wait for: between processes a device.SharedBell in the rank's control buffer (shared),
// within one the rank's device, whose doorbell parks goroutines instead of threads. A
// struct, not an interface: the conditions a wait passes stay on the stack.
type bell struct {
	dev    *device.Device
	shared *device.SharedBell
}

// Ring wakes the rank's waiters.
func (b bell) Ring() {
	if b.shared != nil {
		b.shared.Ring()
		return
	}
	b.dev.Ring()
}

// WaitUntil is the doorbell's WaitUntil.
func (b bell) WaitUntil(timeout time.Duration, aborted, ready func() bool) error {
	if b.shared != nil {
		return b.shared.WaitUntil(timeout, aborted, ready)
	}
	return b.dev.WaitUntil(timeout, aborted, ready)
}

// publish writes the call's descriptor into this rank's control buffer, in its published
// slot, and records it as the rank's last collective (Running).
func (cl *call) publish() {
	ctl := cl.r.peers[cl.r.rank].ctl
	cl.desc.encode(&cl.words)
	storeSlot(ctl[ctlPublished+int(cl.desc.seq%publishedDepth)*slotWords:], &cl.words)
	cl.recordLast(Running)
}

// The last-collective word: 0 before the rank's first call, else the call's state in the
// top byte and its sequence number in the low 56 bits. Its description is the call's
// published slot, which stays the call's until the rank publishes publishedDepth more: one
// store at a call's start and one at its end, where a copy of the description would take a
// seqlock's ten (a tenth of a small all-reduce's CPU).
func (cl *call) recordLast(state CallState) {
	atomic.StoreUint64(&cl.r.peers[cl.r.rank].ctl[ctlLast], uint64(state)<<56|cl.desc.seq&seqMask)
}

// lastCall returns the rank's last collective as its control buffer records it, and its
// state; ok is false before its first call. A description the rank has since overwritten
// (it moved on while this read) leaves only the sequence number.
func (v *peerView) lastCall() (d callDesc, state CallState, ok bool) {
	last := atomic.LoadUint64(&v.ctl[ctlLast])
	if last == 0 {
		return callDesc{}, 0, false
	}
	seq, state := last&seqMask, CallState(last>>56)
	var w descWords
	if loadSlot(v.ctl[ctlPublished+int(seq%publishedDepth)*slotWords:], &w) && w[slotSeq] == seq {
		return w.decode(), state, true
	}
	return callDesc{seq: seq, op: "(description overwritten)"}, state, true
}

// publishedCall copies into w rank p's published call of sequence number seq, and reports
// whether p published it (and has not moved on past the slot's other users).
func (r *Rank) publishedCall(p int, seq uint64, w *descWords) bool {
	return loadSlot(r.peers[p].ctl[ctlPublished+int(seq%publishedDepth)*slotWords:], w) && w[slotSeq] == seq
}

// peerFailure returns the first failure a rank's control buffer holds, or nil.
func (r *Rank) peerFailure() error {
	for p := range r.c.n {
		if err := r.peers[p].failure(p); err != nil {
			return err
		}
	}
	return nil
}

// anyFailed reports whether any rank's failure word is set (peerFailure's quick form).
func (r *Rank) anyFailed() bool {
	for p := range r.c.n {
		if atomic.LoadUint64(&r.peers[p].ctl[ctlFailure]) != 0 {
			return true
		}
	}
	return false
}

// ringPeer wakes rank p's waiters.
func (r *Rank) ringPeer(p int) { r.peers[p].bell.Ring() }
