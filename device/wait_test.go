package device_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

func never() bool { return false }

func TestWaitUntilReadyAtOnce(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	d := dev(t, n, 0)
	for _, timeout := range []time.Duration{0, time.Millisecond, time.Hour} {
		require.NoError(t, d.WaitUntil(timeout, nil, func() bool { return true }))
		require.NoError(t, d.WaitUntil(timeout, never, func() bool { return true }))
	}
}

func TestWaitUntilRing(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	d := dev(t, n, 0)
	for _, timeout := range []time.Duration{0, waitLimit} {
		t.Run(fmt.Sprint(timeout), func(t *testing.T) {
			var flag atomic.Bool
			go func() {
				time.Sleep(5 * time.Millisecond) // let the waiter go to sleep
				flag.Store(true)
				d.Ring()
			}()
			require.NoError(t, d.WaitUntil(timeout, nil, flag.Load))
		})
	}
}

// TestWaitUntilPingPong bounces a counter between two devices many times; a lost wake-up
// would leave one side asleep until its deadline. Each side dawdles a varying while before
// it answers (yields, and now and then a short sleep), so that the waiter is caught at every
// stage: still polling, about to block, and blocked.
func TestWaitUntilPingPong(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1})
	devs := []*device.Device{dev(t, n, 0), dev(t, n, 1)}
	const rounds = 10000
	var flag atomic.Int64
	errc := make(chan error, 2)
	for side := range int64(2) { // side 0 writes odd values, side 1 even ones
		go func() {
			me, peer := devs[side], devs[1-side]
			r := rand.New(rand.NewPCG(uint64(side), 7))
			for i := range int64(rounds) {
				if side == 1 || i > 0 {
					want := 2*i + side
					if err := me.WaitUntil(waitLimit, nil, func() bool { return flag.Load() == want }); err != nil {
						errc <- fmt.Errorf("device %d round %d: %w", side, i, err)
						return
					}
				}
				dawdle(r)
				flag.Store(2*i + side + 1)
				peer.Ring()
			}
			errc <- nil
		}()
	}
	require.NoError(t, <-errc)
	require.NoError(t, <-errc)
	require.EqualValues(t, 2*rounds, flag.Load())
}

// dawdle delays a writer by a random amount: mostly a few yields, sometimes a sleep long
// enough for the peer to block.
func dawdle(r *rand.Rand) {
	if r.IntN(32) == 0 {
		time.Sleep(20 * time.Microsecond)
		return
	}
	for range r.IntN(160) {
		runtime.Gosched()
	}
}

// TestWaitUntilManyWaiters has several goroutines sleep on one device for distinct flags
// that are released one at a time; each ring must reach the waiter it is for.
func TestWaitUntilManyWaiters(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	d := dev(t, n, 0)
	const waiters, rounds = 4, 500
	var turn atomic.Int64
	errc := make(chan error, waiters)
	for w := range int64(waiters) {
		go func() {
			for r := range int64(rounds) {
				mine := r*waiters + w
				if err := d.WaitUntil(waitLimit, nil, func() bool { return turn.Load() == mine }); err != nil {
					errc <- fmt.Errorf("waiter %d round %d: %w", w, r, err)
					return
				}
				turn.Store(mine + 1)
				d.Ring()
			}
			errc <- nil
		}()
	}
	for range waiters {
		require.NoError(t, <-errc)
	}
	require.EqualValues(t, waiters*rounds, turn.Load())
}

func TestWaitUntilDeadline(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	d := dev(t, n, 0)
	for _, aborted := range []func() bool{nil, never} {
		const timeout = 50 * time.Millisecond
		start := time.Now()
		err := d.WaitUntil(timeout, aborted, never)
		require.ErrorIs(t, err, device.ErrDeadline)
		require.GreaterOrEqual(t, time.Since(start), timeout)
	}
}

// TestWaitUntilDeadlineWithRings checks that rings for other waiters neither end the wait
// early nor keep it from timing out.
func TestWaitUntilDeadlineWithRings(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	d := dev(t, n, 0)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				d.Ring()
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	const timeout = 50 * time.Millisecond
	start := time.Now()
	require.ErrorIs(t, d.WaitUntil(timeout, nil, never), device.ErrDeadline)
	require.GreaterOrEqual(t, time.Since(start), timeout)
}

func TestWaitUntilAborted(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	d := dev(t, n, 0)
	t.Run("abort later", func(t *testing.T) {
		var abort atomic.Bool
		go func() {
			time.Sleep(5 * time.Millisecond)
			abort.Store(true)
			d.Ring()
		}()
		require.ErrorIs(t, d.WaitUntil(0, abort.Load, never), device.ErrAborted)
	})
	t.Run("already aborted", func(t *testing.T) {
		require.ErrorIs(t, d.WaitUntil(waitLimit, func() bool { return true }, never), device.ErrAborted)
	})
	t.Run("abort before deadline", func(t *testing.T) {
		var abort atomic.Bool
		go func() {
			time.Sleep(5 * time.Millisecond)
			abort.Store(true)
			d.Ring()
		}()
		require.ErrorIs(t, d.WaitUntil(waitLimit, abort.Load, never), device.ErrAborted)
	})
}

// TestWaitUntilInKernels plays the ping-pong from kernels on streams of two devices, as
// comm's barriers do.
func TestWaitUntilInKernels(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1})
	d0, d1 := dev(t, n, 0), dev(t, n, 1)
	s0, s1 := newStream(t, d0, "s0", 0), newStream(t, d1, "s1", 0)
	const rounds = 1000
	var flag atomic.Int64
	require.NoError(t, s0.Launch(device.Kernel{Name: "ping", Grid: 1, Block: func(b device.Block) error {
		for i := range int64(rounds) {
			flag.Store(2*i + 1)
			d1.Ring()
			want := 2*i + 2
			if err := d0.WaitUntil(waitLimit, b.Aborted, func() bool { return flag.Load() == want }); err != nil {
				return err
			}
		}
		return nil
	}}))
	require.NoError(t, s1.Launch(device.Kernel{Name: "pong", Grid: 1, Block: func(b device.Block) error {
		for i := range int64(rounds) {
			want := 2*i + 1
			if err := d1.WaitUntil(waitLimit, b.Aborted, func() bool { return flag.Load() == want }); err != nil {
				return err
			}
			flag.Store(2*i + 2)
			d0.Ring()
		}
		return nil
	}}))
	require.NoError(t, s0.Synchronize())
	require.NoError(t, s1.Synchronize())
	require.EqualValues(t, 2*rounds, flag.Load())
}
