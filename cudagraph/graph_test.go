package cudagraph

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

func newDevice(t *testing.T, devices int) *device.Node {
	t.Helper()
	n, err := device.NewNode(device.NodeConfig{Devices: devices, SMs: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func stream(t *testing.T, d *device.Device, name string) *device.Stream {
	t.Helper()
	s, err := d.NewStream(name, 0)
	require.NoError(t, err)
	return s
}

// step is a kernel that appends its name to a log.
func step(log *[]string, mu *sync.Mutex, name string, body func()) device.Kernel {
	return device.Kernel{Name: name, Grid: 1, Block: func(device.Block) error {
		if body != nil {
			body()
		}
		mu.Lock()
		*log = append(*log, name)
		mu.Unlock()
		return nil
	}}
}

func TestCaptureReplaySingleStream(t *testing.T) {
	node := newDevice(t, 1)
	dev, _ := node.Device(0)
	s := stream(t, dev, "main")
	buf, err := dev.Alloc(dtype.F32, 4)
	require.NoError(t, err)
	x := buf.Float32s()
	var mu sync.Mutex
	var log []string
	g, err := Capture(s, func() error {
		require.NoError(t, s.Launch(step(&log, &mu, "a", func() { x[0] += 1 })))
		require.NoError(t, s.HostFunc(func() { x[1] = x[0] * 10 }))
		return s.Launch(step(&log, &mu, "b", func() { x[2] = x[1] + 1 }))
	})
	require.NoError(t, err)
	require.Len(t, g.Nodes, 3)
	require.Empty(t, log, "nothing runs while capturing")
	require.Equal(t, float32(0), x[0])

	exec, err := Instantiate(g)
	require.NoError(t, err)
	for i := 1; i <= 5; i++ {
		require.NoError(t, exec.Launch(s))
		require.NoError(t, s.Synchronize())
		require.Equal(t, []float32{float32(i), float32(10 * i), float32(10*i + 1)}, x[:3], "replay %d", i)
	}
	require.Equal(t, []string{"a", "b", "a", "b", "a", "b", "a", "b", "a", "b"}, log)
}

// TestCaptureForkJoin: work forked to a second stream through an event runs concurrently
// with the origin's and is joined back; replays keep every dependency.
func TestCaptureForkJoin(t *testing.T) {
	node := newDevice(t, 1)
	dev, _ := node.Device(0)
	s0, s1 := stream(t, dev, "compute"), stream(t, dev, "comm")
	fork, join := device.NewEvent(), device.NewEvent()
	var mu sync.Mutex
	var log []string
	var running, overlap atomic.Int32
	concurrent := func() {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
	}
	value := 0
	g, err := Capture(s0, func() error {
		require.NoError(t, s0.Launch(step(&log, &mu, "A", func() { value = 1 })))
		require.NoError(t, s0.Record(fork))
		require.NoError(t, s1.WaitEvent(fork))
		require.True(t, s1.Capturing(), "waiting on a captured event joins the capture")
		require.NoError(t, s1.Launch(step(&log, &mu, "B", func() { concurrent(); value *= 7 })))
		require.NoError(t, s0.Launch(step(&log, &mu, "C", concurrent)))
		require.NoError(t, s1.Record(join))
		require.NoError(t, s0.WaitEvent(join))
		return s0.Launch(step(&log, &mu, "D", func() { value += 100 }))
	})
	require.NoError(t, err)
	require.False(t, s1.Capturing())
	exec, err := Instantiate(g)
	require.NoError(t, err)
	for range 10 {
		require.NoError(t, exec.Launch(s0))
	}
	require.NoError(t, s0.Synchronize())
	require.Equal(t, 107, value, "D ran after B, B after A")
	require.Len(t, log, 40)
	for r := range 10 {
		round := log[4*r : 4*r+4]
		require.Equal(t, "A", round[0], "round %d: %v", r, round)
		require.Equal(t, "D", round[3], "round %d: %v", r, round)
		require.ElementsMatch(t, []string{"B", "C"}, round[1:3])
	}
	require.Positive(t, overlap.Load(), "B and C ran at the same time in some replay")
}

func TestCaptureIllegalOperations(t *testing.T) {
	node := newDevice(t, 1)
	dev, _ := node.Device(0)
	s0, s1 := stream(t, dev, "a"), stream(t, dev, "b")
	noop := device.Kernel{Name: "noop", Grid: 1, Block: func(device.Block) error { return nil }}

	_, err := Capture(s0, func() error { return s0.Synchronize() })
	require.ErrorIs(t, err, device.ErrCapture)
	require.ErrorContains(t, err, "synchronize")

	_, err = Capture(s0, func() error {
		_, err := dev.Alloc(dtype.F32, 16)
		return err
	})
	require.ErrorIs(t, err, device.ErrCapture)
	require.ErrorContains(t, err, "allocate before capturing")
	_, err = dev.Alloc(dtype.F32, 16)
	require.NoError(t, err, "allocation works again after the capture")

	fork := device.NewEvent()
	_, err = Capture(s0, func() error {
		require.NoError(t, s0.Record(fork))
		require.NoError(t, s1.WaitEvent(fork))
		return s1.Launch(noop) // never joined back
	})
	require.ErrorContains(t, err, `stream "b" joined the capture and was not joined back`)
	require.False(t, s1.Capturing())

	outside := device.NewEvent()
	require.NoError(t, s1.Record(outside))
	_, err = Capture(s0, func() error { return s0.WaitEvent(outside) })
	require.ErrorContains(t, err, "the event was not recorded under this capture")

	require.NoError(t, s0.BeginCapture())
	require.ErrorContains(t, s0.BeginCapture(), "already capturing")
	_, err = s1.EndCapture()
	require.ErrorContains(t, err, "not the origin of a capture")
	_, err = s0.EndCapture()
	require.NoError(t, err)
	require.NoError(t, s0.Synchronize(), "the stream works normally after capture")
}

// TestCapturedAllReduce replays captured all-reduces on 4 ranks, interleaved with eager
// calls, with new inputs in the same buffers every time: sequence numbers, barrier
// counters and flag-free phases advance on the streams, so replays stay right.
func TestCapturedAllReduce(t *testing.T) {
	const n, count = 4, 3000
	node := newDevice(t, n)
	c, err := comm.New(node, comm.Config{Timeout: 20 * time.Second, LamportBytes: 4096})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	streams := make([]*device.Stream, n)
	ins, outs := make([]*device.Buffer, n), make([]*device.Buffer, n)
	for r := range n {
		dev := c.Rank(r).Device()
		streams[r] = stream(t, dev, "comm")
		ins[r], _ = dev.Alloc(dtype.F32, count)
		outs[r], _ = dev.Alloc(dtype.F32, count)
	}
	for _, algo := range comm.Algos {
		t.Run(algo.String(), func(t *testing.T) {
			execs := make([]*Exec, n)
			for r := range n {
				g, err := Capture(streams[r], func() error {
					return c.Rank(r).AllReduceAlgo(streams[r], algo, ins[r], outs[r], count)
				})
				require.NoError(t, err)
				execs[r], err = Instantiate(g)
				require.NoError(t, err)
			}
			registered, err := c.RegisterGraphBuffers()
			require.NoError(t, err)
			inPlace := algo == comm.OneShot || algo == comm.TwoShot
			require.Equal(t, map[bool]int{true: 1, false: 0}[inPlace], registered, "one-shot and two-shot read their peers' inputs in place")
			saved := c.GraphBytesSaved()
			for i := range 30 {
				comm.Fill(ins, count, uint64(i))
				for r := range n {
					if i%3 == 2 {
						require.NoError(t, c.Rank(r).AllReduceAlgo(streams[r], algo, ins[r], outs[r], count))
					} else {
						require.NoError(t, execs[r].Launch(streams[r]))
					}
				}
				for _, s := range streams {
					require.NoError(t, s.Synchronize())
				}
				require.Zero(t, comm.CountWrong(ins, outs, count), fmt.Sprintf("round %d", i))
			}
			rec, ok := c.Recorder(0).Last()
			require.True(t, ok)
			require.Equal(t, comm.Done, rec.State)
			if inPlace { // 20 replays on 4 ranks skipped copying count f32 each
				require.Equal(t, int64(20*n*count*4), c.GraphBytesSaved()-saved)
			} else {
				require.Equal(t, saved, c.GraphBytesSaved())
			}
		})
	}
}
