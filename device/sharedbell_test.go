//go:build linux

package device_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// sharedWords allocates n zeroed 32-bit words of shareable memory on a fresh node's device 0.
func sharedWords(t testing.TB, n int) []uint32 {
	t.Helper()
	b, err := dev(t, newNode(t, device.NodeConfig{Devices: 1, SMs: 1}), 0).AllocShareable(dtype.F32, n)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Free()) })
	return b.Uint32s()
}

func newBell(t testing.TB, name string, words []uint32) *device.SharedBell {
	t.Helper()
	b, err := device.NewSharedBell(name, words)
	require.NoError(t, err)
	return b
}

func TestSharedBellReadyAtOnce(t *testing.T) {
	bell := newBell(t, "flag", sharedWords(t, device.SharedBellWords))
	for _, timeout := range []time.Duration{0, time.Millisecond, time.Hour} {
		require.NoError(t, bell.WaitUntil(timeout, nil, func() bool { return true }))
		require.NoError(t, bell.WaitUntil(timeout, never, func() bool { return true }))
	}
}

func TestSharedBellRing(t *testing.T) {
	words := sharedWords(t, 3)
	bell := newBell(t, "flag", words)
	for _, timeout := range []time.Duration{0, waitLimit} {
		t.Run(fmt.Sprint(timeout), func(t *testing.T) {
			atomic.StoreUint32(&words[2], 0)
			go func() {
				time.Sleep(5 * time.Millisecond) // let the waiter go to sleep
				atomic.StoreUint32(&words[2], 1)
				bell.Ring()
			}()
			require.NoError(t, bell.WaitUntil(timeout, nil, func() bool { return atomic.LoadUint32(&words[2]) == 1 }))
		})
	}
}

// TestSharedBellRingBeforeSleep has the writer store the flag and ring in the window between
// the waiter's last check and its FUTEX_WAIT: the check missed the flag, so only the
// sequence word the ring bumped keeps the waiter from sleeping through the ring. The waiter
// has no deadline; the test gives up on it after waitLimit.
func TestSharedBellRingBeforeSleep(t *testing.T) {
	words := sharedWords(t, device.SharedBellWords+1)
	bell, flag := newBell(t, "flag", words), &words[device.SharedBellWords]
	calls := 0
	ready := func() bool {
		if calls++; calls == device.SpinRounds+1 { // the first check after the polls, before sleeping
			atomic.StoreUint32(flag, 1)
			bell.Ring()
			return false // as if the check ran just before the store
		}
		return atomic.LoadUint32(flag) == 1
	}
	done := make(chan error, 1)
	go func() { done <- bell.WaitUntil(0, nil, ready) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		bell.Ring() // let the waiter go
		t.Fatal("the waiter slept through a ring that came between its check and its sleep")
	}
}

// TestSharedBellPingPong bounces a counter in shared memory between two bells many times,
// each side dawdling a varying while, so that waiters are caught polling, about to sleep and
// asleep in the kernel; a lost wake-up would leave one side asleep until its deadline.
// With SpinFirst the waiters also end waits spinning.
func TestSharedBellPingPong(t *testing.T) {
	for _, spin := range []time.Duration{0, 20 * time.Microsecond} {
		t.Run(fmt.Sprint("spin ", spin), func(t *testing.T) { pingPong(t, spin) })
	}
}

func pingPong(t *testing.T, spin time.Duration) {
	words := sharedWords(t, 2*device.SharedBellWords+1)
	bells := []*device.SharedBell{newBell(t, "side 0", words[0:]), newBell(t, "side 1", words[device.SharedBellWords:])}
	bells[0].SpinFirst(spin, spin)
	bells[1].SpinFirst(spin, spin)
	flag := &words[2*device.SharedBellWords]
	const rounds = 5000
	errc := make(chan error, 2)
	for side := range uint32(2) { // side 0 writes odd values, side 1 even ones
		go func() {
			r := rand.New(rand.NewPCG(uint64(side), 7))
			for i := range uint32(rounds) {
				if side == 1 || i > 0 {
					want := 2*i + side
					if err := bells[side].WaitUntil(waitLimit, nil, func() bool { return atomic.LoadUint32(flag) == want }); err != nil {
						errc <- fmt.Errorf("side %d round %d: %w", side, i, err)
						return
					}
				}
				dawdle(r)
				atomic.StoreUint32(flag, 2*i+side+1)
				bells[1-side].Ring()
			}
			errc <- nil
		}()
	}
	require.NoError(t, <-errc)
	require.NoError(t, <-errc)
	require.EqualValues(t, 2*rounds, atomic.LoadUint32(flag))
}

// TestSharedBellSpinFirst: a waiter told to spin first polls well past the yielding polls
// without counting itself a sleeper; one not told does count itself after them.
func TestSharedBellSpinFirst(t *testing.T) {
	for _, spin := range []time.Duration{0, time.Minute} {
		words := sharedWords(t, device.SharedBellWords)
		bell := newBell(t, "flag", words)
		bell.SpinFirst(spin, 0)
		calls, slept := 0, false
		require.NoError(t, bell.WaitUntil(waitLimit, nil, func() bool {
			slept = slept || atomic.LoadUint32(&words[1]) > 0 // the sleepers word
			calls++
			return slept || calls > 2*device.SpinRounds // nothing rings: end before the futex
		}))
		require.Equal(t, spin == 0, slept, "spin %v", spin)
	}
}

// TestSharedBellSpinsAfterSpinRanOut: a wait right after one whose spin ran out spins
// again (skipped spins fed themselves: a waiter that skipped slept, its peer's spin ran out
// waiting for it to wake, and the pair stayed in a futex round trip a call).
func TestSharedBellSpinsAfterSpinRanOut(t *testing.T) {
	words := sharedWords(t, device.SharedBellWords)
	bell := newBell(t, "flag", words)
	slept := func() bool { return atomic.LoadUint32(&words[1]) > 0 }
	bell.SpinFirst(time.Microsecond, 0)
	require.NoError(t, bell.WaitUntil(waitLimit, nil, slept)) // the spin runs out
	bell.SpinFirst(time.Minute, 0)
	calls, sleeper := 0, false
	require.NoError(t, bell.WaitUntil(waitLimit, nil, func() bool {
		sleeper = sleeper || slept()
		calls++
		return sleeper || calls > 4*device.SpinRounds
	}))
	require.False(t, sleeper, "a wait right after a spin that ran out did not spin")
}

// TestSharedBellYieldsBeforeSleep: after its spin a waiter told to yield for a while polls,
// yielding, well past the sharedSpinRounds polls of a waiter told nothing, without counting
// itself a sleeper; one told to yield for a microsecond sleeps soon after its spin.
func TestSharedBellYieldsBeforeSleep(t *testing.T) {
	for _, yield := range []time.Duration{time.Microsecond, time.Minute} {
		t.Run(fmt.Sprint("yield ", yield), func(t *testing.T) {
			words := sharedWords(t, device.SharedBellWords)
			bell := newBell(t, "flag", words)
			bell.SpinFirst(time.Microsecond, yield)
			var spun time.Time
			calls, slept := 0, false
			require.NoError(t, bell.WaitUntil(waitLimit, nil, func() bool {
				if spun.IsZero() {
					spun = time.Now()
				}
				slept = slept || atomic.LoadUint32(&words[1]) > 0
				calls++
				// past the spin (a microsecond, ended by the clock), then 8 rounds of
				// yielding polls; nothing rings, so end before the futex
				return slept || time.Since(spun) > 10*time.Millisecond && calls > 8*device.SpinRounds
			}))
			require.Equal(t, yield == time.Microsecond, slept, "yield %v", yield)
		})
	}
}

// TestSharedBellRingWithoutSleepers: a ring that finds no sleeper writes nothing into the
// bell; one that finds a sleeper bumps its sequence word and wakes it.
func TestSharedBellRingWithoutSleepers(t *testing.T) {
	words := sharedWords(t, device.SharedBellWords+1)
	bell, flag := newBell(t, "flag", words), &words[device.SharedBellWords]
	bell.Ring()
	require.Zero(t, atomic.LoadUint32(&words[0]), "a ring with no sleeper")
	done := make(chan error, 1)
	go func() { done <- bell.WaitUntil(waitLimit, nil, func() bool { return atomic.LoadUint32(flag) == 1 }) }()
	require.Eventually(t, func() bool { return atomic.LoadUint32(&words[1]) == 1 }, waitLimit, time.Millisecond)
	atomic.StoreUint32(flag, 1)
	bell.Ring()
	require.NoError(t, <-done)
	require.NotZero(t, atomic.LoadUint32(&words[0]), "a ring with a sleeper")
}

// TestSharedBellManyWaiters has several goroutines sleep on one bell for distinct turns.
func TestSharedBellManyWaiters(t *testing.T) {
	words := sharedWords(t, device.SharedBellWords+1)
	bell, turn := newBell(t, "turn", words), &words[device.SharedBellWords]
	const waiters, rounds = 4, 500
	errc := make(chan error, waiters)
	for w := range uint32(waiters) {
		go func() {
			for r := range uint32(rounds) {
				mine := r*waiters + w
				if err := bell.WaitUntil(waitLimit, nil, func() bool { return atomic.LoadUint32(turn) == mine }); err != nil {
					errc <- fmt.Errorf("waiter %d round %d: %w", w, r, err)
					return
				}
				atomic.StoreUint32(turn, mine+1)
				bell.Ring()
			}
			errc <- nil
		}()
	}
	for range waiters {
		require.NoError(t, <-errc)
	}
	require.EqualValues(t, waiters*rounds, atomic.LoadUint32(turn))
}

func TestSharedBellDeadline(t *testing.T) {
	bell := newBell(t, "rank 1's barrier flag", sharedWords(t, device.SharedBellWords))
	for _, aborted := range []func() bool{nil, never} {
		err := bell.WaitUntil(2*time.Millisecond, aborted, never)
		require.ErrorIs(t, err, device.ErrDeadline)
		require.ErrorContains(t, err, `shared bell "rank 1's barrier flag": deadline exceeded after 2ms`)
	}
}

func TestSharedBellAborted(t *testing.T) {
	bell := newBell(t, "flag", sharedWords(t, device.SharedBellWords))
	var stop atomic.Bool
	go func() {
		time.Sleep(5 * time.Millisecond)
		stop.Store(true)
		bell.Ring()
	}()
	err := bell.WaitUntil(0, stop.Load, never)
	require.ErrorIs(t, err, device.ErrAborted)
	require.ErrorContains(t, err, `shared bell "flag": aborted`)
}

func TestNewSharedBellNeedsWords(t *testing.T) {
	_, err := device.NewSharedBell("flag", make([]uint32, 1))
	require.ErrorContains(t, err, `shared bell "flag" needs 2 words, got 1`)
}
