package device

import "time"

// SpinFirst makes the bell's waiters poll for up to spin without giving their core away,
// then for up to yield giving it away between polls (sched_yield), before they sleep in
// the kernel. It is for waiters whose peers each run on a core of their own, where a flag
// comes within a cache miss and a sched_yield's system call only delays seeing it; where
// processes outnumber the cores, the peer may need this very core, and a waiter must not
// spin.
//
// Every wait spins, even right after one whose spin ran out: skipping the spins after such
// a wait (64 of them, 2312fbc) fed itself on a quiet machine, a waiter that skipped slept,
// its peer's spin ran out waiting for it to wake, and that peer skipped in turn, a futex
// round trip on most calls of most runs. The yielding polls are what keeps a waiter off
// the futex: a wake-up costs tens of microseconds on a virtual machine whose idle core has
// halted, while a yield, where other threads want the core, hands it to them, so a loaded
// machine loses little to it (docs/benchmarks/processes.md, seventh session).
func (b *SharedBell) SpinFirst(spin, yield time.Duration) { b.spin, b.yield = spin, yield }

// pollBeforeSleep polls ready as SpinFirst says, or sharedSpinRounds times yielding where
// it said nothing, and reports whether ready held.
func (b *SharedBell) pollBeforeSleep(ready func() bool) bool {
	if b.spin > 0 && spinUntil(b.spin, ready) {
		return true
	}
	if b.yield > 0 {
		return yieldUntil(b.yield, ready)
	}
	for range sharedSpinRounds {
		if ready() {
			return true
		}
		yieldCPU()
	}
	return false
}

// spinUntil polls ready without yielding for up to d and reports whether it held. The clock
// is read only once a first round of polls has failed: a peer on a core of its own usually
// answers within it, and a clock read costs as much as a cache line from that peer.
func spinUntil(d time.Duration, ready func() bool) bool {
	var start time.Duration
	for {
		for range 64 {
			if ready() {
				return true
			}
		}
		if start == 0 {
			start = monotonic()
		} else if monotonic()-start >= d {
			return false
		}
	}
}

// monotonicBase is what monotonic counts from.
var monotonicBase = time.Now()

// monotonic returns the time since monotonicBase (at least 1ns): one monotonic clock read,
// where time.Now makes two (the wall clock's too), at some 27 ns each on a virtual machine.
func monotonic() time.Duration { return max(time.Since(monotonicBase), 1) }

// yieldUntil polls ready for up to d, giving the core away between polls, and reports
// whether it held. It reads the clock once every yieldRounds polls: a yield is a system
// call, and one that finds another thread waiting for the core lasts that thread's slice.
func yieldUntil(d time.Duration, ready func() bool) bool {
	start := time.Now()
	for {
		for range yieldRounds {
			if ready() {
				return true
			}
			yieldCPU()
		}
		if time.Since(start) >= d {
			return false
		}
	}
}

// yieldRounds is how many yielding polls go between two clock reads of yieldUntil.
const yieldRounds = 16
