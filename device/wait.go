package device

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ErrDeadline is returned (wrapped) by WaitUntil when the deadline passes first.
var ErrDeadline = errors.New("deadline exceeded")

// ErrAborted is returned (wrapped) by WaitUntil when the abort condition becomes true.
var ErrAborted = errors.New("aborted")

// spinRounds is how often a waiter polls (yielding between polls) before it blocks. Ranks
// time-share few cores, so a long spin steals the core from the peer it waits for.
const spinRounds = 64

// doorbell lets waiters block instead of spinning. A writer stores its flag with sync/atomic
// and then rings; a waiter counts itself a sleeper before its last check, so with sequentially
// consistent atomics either the writer sees the sleeper and broadcasts, or the waiter's check
// sees the flag: no wake-up is lost.
type doorbell struct {
	sleepers atomic.Int32
	mu       sync.Mutex
	cond     *sync.Cond
}

func (b *doorbell) init() { b.cond = sync.NewCond(&b.mu) }

func (b *doorbell) ring() {
	if b.sleepers.Load() > 0 {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	}
}

// sleep blocks until done() is true, checking it again each time the bell rings.
func (b *doorbell) sleep(done func() bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sleepers.Add(1)
	defer b.sleepers.Add(-1)
	for !done() {
		b.cond.Wait()
	}
}

// WaitUntil returns nil once ready() is true. It polls briefly, then blocks until a writer
// rings this device. It returns ErrDeadline once timeout has passed (0 waits forever) and
// ErrAborted once aborted() is true (aborted may be nil). Both conditions must read shared
// state with sync/atomic.
func (d *Device) WaitUntil(timeout time.Duration, aborted func() bool, ready func() bool) error {
	for range spinRounds {
		if ready() {
			return nil
		}
		runtime.Gosched()
	}
	b := &d.bell
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
		timer := time.AfterFunc(timeout, func() {
			b.mu.Lock()
			b.cond.Broadcast()
			b.mu.Unlock()
		})
		defer timer.Stop()
	}
	isAborted := func() bool { return aborted != nil && aborted() }
	b.sleep(func() bool {
		return ready() || isAborted() || !deadline.IsZero() && !time.Now().Before(deadline)
	})
	switch {
	case ready():
		return nil
	case isAborted():
		return ErrAborted
	default:
		return ErrDeadline
	}
}
