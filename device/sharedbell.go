package device

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"
)

// sharedSpinRounds is how often a shared bell's waiter polls before it sleeps, giving the
// core away between polls (yieldCPU), where SpinFirst did not set how long.
const sharedSpinRounds = 64

// SharedBellWords is how many 32-bit words of shared memory a SharedBell occupies.
const SharedBellWords = 2

// SharedBell is a doorbell whose state lives in memory that processes share: the form of a
// Device's doorbell (Device.Ring, Device.WaitUntil) that works across address spaces, with the
// same semantics. A waiter polls briefly (spinning first, and yielding longer, where
// SpinFirst says its peers have cores of their own), giving its core away between polls
// (sched_yield), then sleeps on the bell's sequence word in the kernel (FUTEX_WAIT, not
// process-private, so the key is the shared page, not the address); Ring, when someone
// sleeps, bumps the word and wakes them (FUTEX_WAKE). Every word is accessed with
// sync/atomic.
type SharedBell struct {
	name string
	// seq changes on every ring that finds a sleeper: a waiter that read it before such a
	// ring finds it changed when it goes to sleep, and the kernel returns at once, so no
	// wake-up is lost.
	seq *uint32
	// sleepers counts waiters past their polls: a ring with none writes nothing (a waiter
	// counts itself before its last check, and a writer stores its flag before it looks).
	sleepers *uint32
	// spin is how long a waiter polls without giving its core away first, and yield how
	// long it then polls giving its core away between polls before it sleeps (SpinFirst,
	// sharedspin.go); with neither it polls sharedSpinRounds times, yielding, and sleeps.
	spin, yield time.Duration
}

// NewSharedBell places a bell named name (what errors say was waited for) on the first
// SharedBellWords words of words, which every process that rings or waits maps; zeroed
// words are a fresh bell.
func NewSharedBell(name string, words []uint32) (*SharedBell, error) {
	if len(words) < SharedBellWords {
		return nil, fmt.Errorf("device: shared bell %q needs %d words, got %d", name, SharedBellWords, len(words))
	}
	if uintptr(unsafe.Pointer(&words[0]))%4 != 0 {
		return nil, fmt.Errorf("device: shared bell %q: words not 4-byte aligned", name)
	}
	return &SharedBell{name: name, seq: &words[0], sleepers: &words[1]}, nil
}

// String names the bell as errors print it.
func (b *SharedBell) String() string { return fmt.Sprintf("shared bell %q", b.name) }

// Ring wakes the waiters of the bell in every process. Writers call it after they store the
// flag a waiter may be polling.
func (b *SharedBell) Ring() {
	if atomic.LoadUint32(b.sleepers) > 0 {
		atomic.AddUint32(b.seq, 1)
		futexWake(b.seq)
	}
}

// WaitUntil returns nil once ready() is true. It polls briefly, then sleeps until a writer
// in any process rings the bell. It returns an error wrapping ErrDeadline once timeout has
// passed (0 waits forever) and ErrAborted once aborted() is true (aborted may be nil); both
// name the bell. Whoever makes aborted() true rings the bell so that sleepers see it. Both
// conditions must read shared state with sync/atomic.
func (b *SharedBell) WaitUntil(timeout time.Duration, aborted func() bool, ready func() bool) error {
	if b.pollBeforeSleep(ready) {
		return nil
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	// Counted before any sleep: a ring that finds no sleeper and skips the wake has bumped seq
	// already, and the kernel compares seq before it sleeps.
	atomic.AddUint32(b.sleepers, 1)
	defer atomic.AddUint32(b.sleepers, ^uint32(0))
	for {
		seq := atomic.LoadUint32(b.seq)
		switch {
		case ready():
			return nil
		case aborted != nil && aborted():
			return fmt.Errorf("%v: %w", b, ErrAborted)
		}
		var left time.Duration
		if !deadline.IsZero() {
			if left = time.Until(deadline); left <= 0 {
				return fmt.Errorf("%v: %w after %v", b, ErrDeadline, timeout)
			}
		}
		if err := futexWait(b.seq, seq, left); err != nil {
			return fmt.Errorf("%v: %w", b, err)
		}
	}
}
