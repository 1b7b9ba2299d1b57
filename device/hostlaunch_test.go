package device_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// goroutineID parses the calling goroutine's id out of its stack header, to tell which
// goroutine ran a kernel.
func goroutineID() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	f := bytes.Fields(buf[:n])
	id, _ := strconv.ParseUint(string(f[1]), 10, 64)
	return id
}

// An idle stream's LaunchAndWait runs the kernel's prologue and epilogue on the calling
// goroutine, its blocks there (one SM) or there and on the stream's SM helpers, each block
// once, and counts it.
func TestLaunchAndWaitRunsOnHost(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 4})
	for _, budget := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("budget%d", budget), func(t *testing.T) {
			s := newStream(t, dev(t, n, 0), "s", budget)
			me := goroutineID()
			for i, grid := range []int{1, 3, 8} {
				var ran, onCaller atomic.Int32
				var prologue, epilogue atomic.Bool
				require.NoError(t, s.LaunchAndWait(device.Kernel{
					Name:     "k",
					Grid:     grid,
					Prologue: func() error { prologue.Store(goroutineID() == me); return nil },
					Block: func(device.Block) error {
						ran.Add(1)
						if goroutineID() == me {
							onCaller.Add(1)
						}
						return nil
					},
					Epilogue: func(err error) { epilogue.Store(err == nil && goroutineID() == me) },
				}))
				require.Equal(t, int32(grid), ran.Load())
				require.True(t, prologue.Load(), "the prologue ran on the caller")
				require.True(t, epilogue.Load(), "the epilogue ran on the caller, without error")
				if budget == 1 { // more SMs: the helpers may take every block
					require.Equal(t, int32(grid), onCaller.Load(), "one SM: every block on the caller")
				}
				require.Equal(t, uint64(i+1), s.HostLaunches())
			}
		})
	}
}

// A stream with work queued (a kernel that has not finished) does not run the next kernel
// on the host: it queues behind, and runs after the one before it.
func TestLaunchAndWaitQueuesBehindPendingWork(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	s := newStream(t, dev(t, n, 0), "s", 1)
	gate, started := make(chan struct{}), make(chan struct{})
	var openGate sync.Once
	release := func() { openGate.Do(func() { close(gate) }) }
	t.Cleanup(release) // a failure below must not leave the stream blocked, nor its Close
	var l log
	require.NoError(t, s.Launch(device.Kernel{Name: "first", Grid: 1, Block: func(device.Block) error {
		close(started)
		<-gate
		l.add("first")
		return nil
	}}))
	<-started
	done := make(chan error, 1)
	go func() {
		done <- s.LaunchAndWait(device.Kernel{Name: "second", Grid: 1, Block: func(device.Block) error {
			l.add("second")
			return nil
		}})
	}()
	select {
	case err := <-done:
		t.Fatalf("LaunchAndWait returned (%v) before the kernel queued before it finished", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	require.NoError(t, <-done)
	require.Equal(t, []string{"first", "second"}, l.get())
	require.Zero(t, s.HostLaunches(), "a busy stream runs the kernel itself")

	// Once the stream is idle again (after a Synchronize), the host runs it.
	require.NoError(t, s.LaunchAndWait(device.Kernel{Name: "third", Grid: 1, Block: func(device.Block) error { return nil }}))
	require.Equal(t, uint64(1), s.HostLaunches())
}

// Under capture LaunchAndWait is Launch then Synchronize: the kernel becomes a node, the
// wait fails as Synchronize does, nothing runs.
func TestLaunchAndWaitUnderCapture(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	s := newStream(t, dev(t, n, 0), "s", 0)
	var ran atomic.Bool
	require.NoError(t, s.BeginCapture())
	err := s.LaunchAndWait(device.Kernel{Name: "k", Grid: 1, Block: func(device.Block) error { ran.Store(true); return nil }})
	require.ErrorIs(t, err, device.ErrCapture)
	_, err = s.EndCapture()
	require.ErrorIs(t, err, device.ErrCapture)
	require.False(t, ran.Load())
	require.Zero(t, s.HostLaunches())
}

// A kernel that fails on the host makes the stream's error sticky, as on the stream: the
// call returns it, and the next kernel, host-run or queued, is skipped with it.
func TestLaunchAndWaitErrorIsSticky(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	s := newStream(t, dev(t, n, 0), "s", 0)
	boom := errors.New("boom")
	err := s.LaunchAndWait(device.Kernel{Name: "bad", Grid: 2, Block: func(b device.Block) error {
		if b.Index == 1 {
			return boom
		}
		return nil
	}})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "kernel bad block 1/2")
	var skipped error
	err = s.LaunchAndWait(device.Kernel{Name: "next", Grid: 1, Block: func(device.Block) error { return nil },
		Epilogue: func(err error) { skipped = err }})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, skipped, "skipped after an earlier failure")
}

// Bad kernels and a closed stream are errors, as for Launch.
func TestLaunchAndWaitErrors(t *testing.T) {
	n, err := device.NewNode(device.NodeConfig{Devices: 1, SMs: 1})
	require.NoError(t, err)
	s, err := dev(t, n, 0).NewStream("s", 0)
	require.NoError(t, err)
	require.ErrorContains(t, s.LaunchAndWait(device.Kernel{Name: "k", Grid: 0, Block: func(device.Block) error { return nil }}), "grid must be at least 1")
	require.ErrorContains(t, s.LaunchAndWait(device.Kernel{Name: "k", Grid: 1}), "no Block function")
	require.NoError(t, n.Close())
	require.ErrorIs(t, s.LaunchAndWait(device.Kernel{Name: "k", Grid: 1, Block: func(device.Block) error { return nil }}), device.ErrStreamClosed)
}

// Host-run and queued kernels back to back from several goroutines: a stream still runs
// one kernel at a time (the blocks append to a slice without a lock: -race catches two
// kernels at once) and each goroutine's kernels in the order it issued them.
func TestLaunchAndWaitMixedStress(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	s := newStream(t, dev(t, n, 0), "s", 1)
	const issuers, calls = 3, 300
	var order []int // issuer*calls + call, in the order the kernels ran
	var running atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, issuers)
	for g := range issuers {
		wg.Go(func() {
			for i := range calls {
				tag := g*calls + i
				k := device.Kernel{Name: "k", Grid: 1, Block: func(device.Block) error {
					if running.Swap(true) {
						return errors.New("two kernels of one stream ran at once")
					}
					order = append(order, tag)
					running.Store(false)
					return nil
				}}
				var err error
				if (g+i)%3 == 0 {
					err = s.Launch(k)
				} else {
					err = s.LaunchAndWait(k)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, s.Synchronize())
	require.Len(t, order, issuers*calls)
	next := make([]int, issuers)
	for _, tag := range order {
		g, i := tag/calls, tag%calls
		require.Equal(t, next[g], i, "issuer %d's kernels out of order", g)
		next[g]++
	}
	require.Positive(t, s.HostLaunches())
	t.Logf("%d of %d kernels ran on the host", s.HostLaunches(), issuers*calls)
}

// Closing the node while a host-executed launch runs waits for it, as for queued work: the
// launch has not yet handed its blocks to the stream's SM helpers, which closing stops.
func TestCloseWaitsForHostLaunch(t *testing.T) {
	n, err := device.NewNode(device.NodeConfig{Devices: 1, SMs: 2})
	require.NoError(t, err)
	s, err := dev(t, n, 0).NewStream("s", 2)
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	var blocks atomic.Int32
	launched := make(chan error, 1)
	go func() {
		launched <- s.LaunchAndWait(device.Kernel{Name: "k", Grid: 2,
			Prologue: func() error { close(entered); <-release; return nil },
			Block:    func(device.Block) error { blocks.Add(1); return nil }})
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a host-executed launch ran", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	for _, ch := range []chan error{launched, closed} {
		select {
		case err := <-ch:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("a host-executed launch and Close hang")
		}
	}
	require.Equal(t, int32(2), blocks.Load())
	require.Equal(t, uint64(1), s.HostLaunches())
}
