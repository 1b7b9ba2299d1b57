package device_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// TestWaitEventOrdersStreams makes stream b wait for a slow kernel on stream a.
func TestWaitEventOrdersStreams(t *testing.T) {
	for _, sameDevice := range []bool{true, false} {
		name := "two devices"
		if sameDevice {
			name = "one device"
		}
		t.Run(name, func(t *testing.T) {
			n := newNode(t, device.NodeConfig{Devices: 2, SMs: 2})
			da, db := dev(t, n, 0), dev(t, n, 1)
			if sameDevice {
				db = da
			}
			a, b := newStream(t, da, "a", 1), newStream(t, db, "b", 1)
			var l log
			var produced atomic.Int64
			var consumerSaw atomic.Int64
			e := device.NewEvent()

			require.NoError(t, a.Launch(device.Kernel{Name: "slow", Grid: 1, Block: func(device.Block) error {
				time.Sleep(20 * time.Millisecond)
				produced.Store(42)
				l.add("a:slow")
				return nil
			}}))
			require.NoError(t, a.Record(e))
			require.NoError(t, a.HostFunc(func() { l.add("a:after-record") }))

			require.NoError(t, b.WaitEvent(e))
			require.NoError(t, b.Launch(device.Kernel{Name: "consume", Grid: 1, Block: func(device.Block) error {
				consumerSaw.Store(produced.Load())
				l.add("b:consume")
				return nil
			}}))

			require.NoError(t, b.Synchronize())
			require.EqualValues(t, 42, consumerSaw.Load(), "b's kernel ran before a's kernel finished")
			require.True(t, e.Done())
			require.NoError(t, a.Synchronize())
			items := l.get()
			require.Len(t, items, 3)
			require.Equal(t, "a:slow", items[0])
			require.ElementsMatch(t, []string{"a:slow", "a:after-record", "b:consume"}, items)
		})
	}
}

// TestWaitEventUsesLatestRecord checks that a wait refers to the record current at the time
// of the WaitEvent call, and that re-recording works round after round.
func TestWaitEventUsesLatestRecord(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	d := dev(t, n, 0)
	a, b := newStream(t, d, "a", 1), newStream(t, d, "b", 1)
	e := device.NewEvent()
	var counter atomic.Int64
	var bad atomic.Int64
	const rounds = 50
	for i := range int64(rounds) {
		require.NoError(t, a.Launch(device.Kernel{Name: "inc", Grid: 1, Block: func(device.Block) error {
			counter.Add(1)
			return nil
		}}))
		require.NoError(t, a.Record(e))
		require.NoError(t, b.WaitEvent(e))
		require.NoError(t, b.Launch(device.Kernel{Name: "check", Grid: 1, Block: func(device.Block) error {
			if counter.Load() < i+1 {
				bad.Add(1)
			}
			return nil
		}}))
	}
	require.NoError(t, b.Synchronize())
	require.NoError(t, a.Synchronize())
	require.Zero(t, bad.Load())
}

func TestWaitEventNeverRecordedIsNoOp(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	d := dev(t, n, 0)
	a, b := newStream(t, d, "a", 1), newStream(t, d, "b", 1)
	e := device.NewEvent()
	require.True(t, e.Done(), "an unrecorded event has nothing to wait for")
	e.Synchronize() // returns at once

	require.NoError(t, b.WaitEvent(e))
	// Recording e after the wait was enqueued must not make b wait for it.
	g := newGate()
	require.NoError(t, a.Launch(device.Kernel{Name: "blocked", Grid: 1, Block: func(device.Block) error { return g.wait() }}))
	require.NoError(t, a.Record(e))
	var ran atomic.Bool
	require.NoError(t, b.HostFunc(func() { ran.Store(true) }))
	require.NoError(t, b.Synchronize())
	require.True(t, ran.Load())
	require.False(t, e.Done())
	g.open()
	require.NoError(t, a.Synchronize())
	require.True(t, e.Done())
}

func TestEventSynchronizeAndDone(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	s := newStream(t, dev(t, n, 0), "s", 0)
	e := device.NewEvent()
	g := newGate()
	var kernelDone atomic.Bool
	require.NoError(t, s.Launch(device.Kernel{Name: "gated", Grid: 1, Block: func(device.Block) error {
		err := g.wait()
		kernelDone.Store(true)
		return err
	}}))
	require.NoError(t, s.Record(e))
	require.False(t, e.Done())

	done := make(chan bool)
	go func() {
		e.Synchronize()
		done <- kernelDone.Load()
	}()
	select {
	case <-done:
		require.Fail(t, "Event.Synchronize returned before the recorded work finished")
	case <-time.After(5 * time.Millisecond):
	}
	g.open()
	select {
	case sawDone := <-done:
		require.True(t, sawDone)
	case <-time.After(waitLimit):
		require.Fail(t, "Event.Synchronize did not return")
	}
	require.True(t, e.Done())

	// Recording again makes the event pending until the new point is reached.
	g2 := newGate()
	require.NoError(t, s.Launch(device.Kernel{Name: "gated2", Grid: 1, Block: func(device.Block) error { return g2.wait() }}))
	require.NoError(t, s.Record(e))
	require.False(t, e.Done())
	g2.open()
	e.Synchronize()
	require.True(t, e.Done())
	require.NoError(t, s.Synchronize())
}

func TestElapsed(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	s := newStream(t, dev(t, n, 0), "s", 0)
	start, end := device.NewEvent(), device.NewEvent()
	const nap = 20 * time.Millisecond
	require.NoError(t, s.Record(start))
	require.NoError(t, s.Launch(device.Kernel{Name: "nap", Grid: 1, Block: func(device.Block) error {
		time.Sleep(nap)
		return nil
	}}))
	require.NoError(t, s.Record(end))
	require.NoError(t, s.Synchronize())

	dt, err := device.Elapsed(start, end)
	require.NoError(t, err)
	require.GreaterOrEqual(t, dt, nap)
	back, err := device.Elapsed(end, start)
	require.NoError(t, err)
	require.Equal(t, -dt, back)
	zero, err := device.Elapsed(start, start)
	require.NoError(t, err)
	require.Zero(t, zero)
}

func TestElapsedErrors(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	s := newStream(t, dev(t, n, 0), "s", 0)
	recorded := device.NewEvent()
	require.NoError(t, s.Record(recorded))
	require.NoError(t, s.Synchronize())

	g := newGate()
	pending := device.NewEvent()
	require.NoError(t, s.Launch(device.Kernel{Name: "gated", Grid: 1, Block: func(device.Block) error { return g.wait() }}))
	require.NoError(t, s.Record(pending))
	defer func() {
		g.open()
		require.NoError(t, s.Synchronize())
	}()

	for _, tc := range []struct {
		name       string
		start, end *device.Event
	}{
		{"unrecorded start", device.NewEvent(), recorded},
		{"unrecorded end", recorded, device.NewEvent()},
		{"both unrecorded", device.NewEvent(), device.NewEvent()},
		{"pending end", recorded, pending},
		{"pending start", pending, recorded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dt, err := device.Elapsed(tc.start, tc.end)
			require.Error(t, err)
			require.Zero(t, dt)
			require.Contains(t, err.Error(), "elapsed")
		})
	}
}

// TestRecordOnClosedStream checks that a refused Record leaves the event as it was instead
// of pending forever.
func TestRecordOnClosedStream(t *testing.T) {
	n, err := device.NewNode(device.NodeConfig{Devices: 1, SMs: 1})
	require.NoError(t, err)
	s := newStream(t, dev(t, n, 0), "s", 0)
	e := device.NewEvent()
	require.NoError(t, s.Record(e))
	require.NoError(t, s.Synchronize())
	require.NoError(t, n.Close())

	require.ErrorIs(t, s.Record(e), device.ErrStreamClosed)
	require.True(t, e.Done(), "a Record that was refused must not leave the event pending")
	done := make(chan struct{})
	go func() { e.Synchronize(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		require.Fail(t, "Event.Synchronize hangs after a refused Record")
	}

	fresh := device.NewEvent()
	require.ErrorIs(t, s.Record(fresh), device.ErrStreamClosed)
	_, err = device.Elapsed(fresh, e)
	require.Error(t, err, "an event whose only Record was refused was never recorded")
}
