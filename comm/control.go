package comm

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tpslice/tpslice/device"
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
	// spins says the waiters spin before they yield (the ranks' threads fit on the cores):
	// a peer is then usually there within a round of polls (readySoon).
	spins bool
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

// waitPolls is how often a spinning waiter polls before a wait reads the clock: about half
// a microsecond of polls on a line in this core's cache, the time a peer on the other core
// takes to answer when both are running.
const waitPolls = 256

// readySoon reports whether ready holds now or, where the waiters spin, within a round of
// waitPolls polls. At a microsecond a call across processes, the two clock reads and the
// record's lock of a wait that goes on were a fifth of it; where the ranks outnumber the
// cores a peer cannot come while this rank holds the core, and one check is all.
func (b bell) readySoon(ready func() bool) bool {
	if !b.spins {
		return ready()
	}
	for range waitPolls {
		if ready() {
			return true
		}
	}
	return false
}
