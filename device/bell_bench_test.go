//go:build linux

package device_test

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/ipc"
)

// bell is what a Device and a SharedBell both offer: a waiter sleeps until a writer rings.
type bell interface {
	Ring()
	WaitUntil(timeout time.Duration, aborted, ready func() bool) error
}

// stopFlag tells the answering side of a round-trip benchmark to return.
const stopFlag = math.MaxUint32

// answer plays the far side of a ping-pong on flag: it waits on mine for each odd value and
// answers with the next even one on theirs, until it reads stopFlag.
func answer(mine, theirs bell, flag *uint32) error {
	for i := uint32(0); ; i++ {
		want := 2*i + 1
		if err := mine.WaitUntil(waitLimit, nil, func() bool {
			v := atomic.LoadUint32(flag)
			return v == want || v == stopFlag
		}); err != nil {
			return err
		}
		if atomic.LoadUint32(flag) == stopFlag {
			return nil
		}
		atomic.StoreUint32(flag, want+1)
		theirs.Ring()
	}
}

// ping runs b's loop, one round trip an iteration, then stops the answering side.
func ping(b *testing.B, mine, theirs bell, flag *uint32) {
	var i uint32
	for b.Loop() {
		atomic.StoreUint32(flag, 2*i+1)
		theirs.Ring()
		want := 2*i + 2
		require.NoError(b, mine.WaitUntil(waitLimit, nil, func() bool { return atomic.LoadUint32(flag) == want }))
		i++
	}
	atomic.StoreUint32(flag, stopFlag)
	theirs.Ring()
}

// BenchmarkBellRoundTrip is one round trip between two waiters: a flag stored, the other
// side woken, its answer awaited; ns/op is per round trip. doorbell: two devices' in-process
// doorbells between goroutines; shared: SharedBells in shareable memory between goroutines;
// processes: SharedBells with the answering side a child process, as between ranks that run
// as processes of their own; processes-spin: the same with both sides spinning first
// (SpinFirst), as ranks that each have a core do: the floor under one barrier between two
// rank processes.
//
//	go test ./device -run '^$' -bench BellRoundTrip
func BenchmarkBellRoundTrip(b *testing.B) {
	b.Run("doorbell", func(b *testing.B) {
		n := newNode(b, device.NodeConfig{Devices: 2, SMs: 1})
		var flag uint32
		d0, d1 := dev(b, n, 0), dev(b, n, 1)
		done := make(chan error, 1)
		go func() { done <- answer(d1, d0, &flag) }()
		ping(b, d0, d1, &flag)
		require.NoError(b, <-done)
	})
	b.Run("shared", func(b *testing.B) {
		words := sharedWords(b, dataWord)
		mine, child := newBell(b, "ping", words[parentBell:]), newBell(b, "pong", words[childBell:])
		done := make(chan error, 1)
		go func() { done <- answer(child, mine, &words[flagWord]) }()
		ping(b, mine, child, &words[flagWord])
		require.NoError(b, <-done)
	})
	b.Run("processes", func(b *testing.B) { pingProcess(b, "pong") })
	b.Run("processes-spin", func(b *testing.B) { pingProcess(b, "pong-spin") })
}

// pingSpin is how long both sides of processes-spin spin before they yield: as long as a
// rank's waiter does where the ranks fit on the cores (comm's sharedSpin).
// pingSpin and pingYield are the spin and the yielding polls of a rank's waiter that has
// a core (comm's sharedSpin and sharedYield).
const (
	pingSpin  = 20 * time.Microsecond
	pingYield = time.Millisecond
)

// pingProcess is BenchmarkBellRoundTrip's round trip with a child process answering in role
// ("pong-spin": both sides spin first, as ranks that each have a core do; the floor under a
// barrier between two rank processes).
func pingProcess(b *testing.B, role string) {
	p := newParent(b)
	buf, err := p.dev.AllocShareable(dtype.F32, dataWord)
	require.NoError(b, err)
	words := buf.Uint32s()
	mine, child := newBell(b, "pong", words[parentBell:]), newBell(b, "ping", words[childBell:])
	if role == "pong-spin" {
		mine.SpinFirst(pingSpin, pingYield)
	}
	p.bell.Store(mine)
	conn, pid := p.start(b, role)
	h, err := buf.ExportShareable()
	require.NoError(b, err)
	require.NoError(b, ipc.SendHandle(conn, h))
	require.NoError(b, h.Close())
	ping(b, mine, child, &words[flagWord])
	p.finish(b, pid, buf)
}
