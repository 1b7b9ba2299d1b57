package device_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/device"
)

// threadCPUs returns the CPUs the calling thread may run on.
func threadCPUs(t *testing.T) []int {
	cpus, err := cpusOfThread()
	require.NoError(t, err)
	return cpus
}

// cpusOfThread returns the CPUs the calling thread may run on, from any goroutine.
func cpusOfThread() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out []int
	for c := range device.MaxCPUs {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// twoCPUs returns two CPUs this process may run on, or skips the test.
func twoCPUs(t *testing.T) (int, int) {
	cpus := threadCPUs(t)
	if len(cpus) < 2 {
		t.Skipf("this process may run on CPUs %v only: pinning two devices to a CPU each needs two", cpus)
	}
	return cpus[0], cpus[1]
}

// pinnedNode builds a node whose devices are pinned to cpus, or skips the test where the
// kernel refuses the affinity (a seccomp profile or a cpuset that forbids it).
func pinnedNode(t *testing.T, sms int, cpus ...[]int) (*device.Node, []*device.Stream) {
	n := newNode(t, device.NodeConfig{Devices: len(cpus), SMs: sms, CPUs: cpus})
	var streams []*device.Stream
	for _, d := range n.Devices() {
		s, err := d.NewStream("compute", 0)
		if errors.Is(err, unix.EPERM) {
			t.Skipf("sched_setaffinity refused: %v", err)
		}
		require.NoError(t, err)
		streams = append(streams, s)
	}
	return n, streams
}

// TestSMWorkersPinned: every SM worker of a pinned device (the stream's goroutine and its
// helpers, each running a block of a kernel whose blocks wait until all are running) runs
// on a thread restricted to the device's CPUs: device 0 on the first allowed CPU, device 1
// on the second.
func TestSMWorkersPinned(t *testing.T) {
	a, b := twoCPUs(t)
	const sms = 3
	_, streams := pinnedNode(t, sms, []int{a}, []int{b})
	for id, s := range streams {
		var (
			running atomic.Int32
			mu      sync.Mutex
			seen    = map[int][]int{} // thread id → its CPUs
		)
		require.NoError(t, s.Launch(device.Kernel{Name: "affinity", Grid: sms, Block: func(device.Block) error {
			running.Add(1)
			for deadline := time.Now().Add(waitLimit); running.Load() < sms; {
				if time.Now().After(deadline) {
					return errTimeout
				}
				time.Sleep(time.Millisecond)
			}
			cpus, err := cpusOfThread()
			if err != nil {
				return err
			}
			mu.Lock()
			seen[unix.Gettid()] = cpus
			mu.Unlock()
			return nil
		}}))
		require.NoError(t, s.Synchronize())
		require.Len(t, seen, sms, "device %d: every SM worker ran a block on a thread of its own", id)
		for tid, cpus := range seen {
			require.Equal(t, streams[id].Device().CPUs(), cpus, "device %d, thread %d", id, tid)
		}
	}
}

// TestRunOnCPUs: a device's host work runs on a thread pinned to its CPUs and leaves the
// caller's thread as it was; an unpinned device runs it on the caller.
func TestRunOnCPUs(t *testing.T) {
	a, b := twoCPUs(t)
	n, _ := pinnedNode(t, 1, []int{a}, []int{b})
	before := threadCPUs(t)
	for id, d := range n.Devices() {
		var got []int
		require.NoError(t, d.RunOnCPUs(func() (err error) { got, err = cpusOfThread(); return err }))
		require.Equal(t, []int{[]int{a, b}[id]}, got)
	}
	require.ErrorContains(t, dev(t, n, 0).RunOnCPUs(func() error { panic("loader broke") }), "panic: loader broke")
	plain := dev(t, newNode(t, device.NodeConfig{Devices: 1, SMs: 1}), 0)
	require.Nil(t, plain.CPUs())
	ran := false
	require.NoError(t, plain.RunOnCPUs(func() error { ran = true; return nil }))
	require.True(t, ran)
	require.Equal(t, before, threadCPUs(t))
}

// TestCPUsRefused: CPU sets that do not fit the node, or that the kernel refuses, are
// errors naming the device.
func TestCPUsRefused(t *testing.T) {
	_, err := device.NewNode(device.NodeConfig{Devices: 2, SMs: 1, CPUs: [][]int{{0}}})
	require.ErrorContains(t, err, "1 CPU sets for 2 devices")
	_, err = device.NewNode(device.NodeConfig{Devices: 1, SMs: 1, CPUs: [][]int{{2048}}})
	require.ErrorContains(t, err, "device 0's CPUs [2048]: CPU 2048 is outside 0-1023")
	allowed := threadCPUs(t)
	missing := allowed[len(allowed)-1] + 1
	if missing >= device.MaxCPUs {
		t.Skipf("every CPU a set holds is allowed here")
	}
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2, CPUs: [][]int{{missing}}})
	_, err = dev(t, n, 0).NewStream("compute", 0)
	require.ErrorContains(t, err, `device 0 stream "compute": pin an SM worker to CPUs`)
	require.ErrorIs(t, err, unix.EINVAL)
}
