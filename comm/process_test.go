//go:build linux

package comm

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestProcessCollectives runs every algorithm, protocol and wire with one process per rank
// at 2, 4 and 8 ranks (and two hosts), bitwise the in-process results.
func TestProcessCollectives(t *testing.T) {
	counts := []int{1, 300, 3000} // 3000 f32 is three chunks of a 4 KiB buffer
	for _, tc := range []struct {
		n, hosts int
		wire     Wire
	}{
		{2, 1, WireExact}, {4, 1, WireExact}, {8, 1, WireExact}, {4, 2, WireExact}, {8, 2, WireExact},
		{2, 1, WireBF16}, {4, 1, WireFP8}, {8, 1, WireFP8},
	} {
		t.Run(fmt.Sprintf("n%d/hosts%d/%v", tc.n, tc.hosts, tc.wire), func(t *testing.T) {
			runProcessGroup(t, newProcSpec(t, tc.n, tc.hosts, device.NVSwitch, tc.wire, counts))
		})
	}
}

// TestProcessCollectivesBlocking is TestProcessCollectives with every all-reduce issued
// by AllReduceWait (MPI_Allreduce's shape), which runs the call's kernel on the rank's
// host goroutine wherever its stream is idle: the same bits as in one process, and rank
// 0's small calls ran on the host.
func TestProcessCollectivesBlocking(t *testing.T) {
	for _, n := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("n%d", n), func(t *testing.T) {
			spec := newProcSpec(t, n, 1, device.NVSwitch, WireExact, []int{1, 300, 3000})
			spec.Blocking = true
			var s *device.Stream
			runProcessGroupOn(t, spec, func(d *device.Device) *device.Stream {
				var err error
				s, err = d.NewStream("comm", 0)
				require.NoError(t, err)
				return s
			})
			require.Positive(t, s.HostLaunches(), "no all-reduce ran on the host")
			t.Logf("rank 0: %d of %d calls ran on the host", s.HostLaunches(), len(spec.Calls))
		})
	}
}

// TestProcessBackToBack issues hundreds of small all-reduces back to back, one-shot,
// two-shot and the default's choice in turn on fresh inputs, before any rank waits: the
// barriers' flag sets and counters cycle while the ranks run calls apart. In one process the
// results are bitwise those of calls synchronized one by one, and with a process per rank
// bitwise those in one process (-race covers the driver's rank).
func TestProcessBackToBack(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("n%d", n), func(t *testing.T) {
			spec := &procSpec{N: n, Fabric: device.NVSwitch, Timeout: 20 * time.Second, BackToBack: true}
			for i := range 300 {
				algo := []Algo{OneShot, TwoShot, Auto}[i%3]
				spec.Calls = append(spec.Calls, procCall{Op: device.OpAllReduce, Algo: algo, DType: dtype.F32, Count: []int{64, 256, 1000}[i%3]})
			}
			seq := *spec
			seq.BackToBack = false
			require.Equal(t, inProcessHashes(t, &seq), inProcessHashes(t, spec), "back to back in one process differs from one by one")
			runProcessGroup(t, spec)
		})
	}
}

// TestProcessNVLSCountsShared checks that the multicast object's counters live in shared
// memory: rank 0 sees the NVLS calls of every process go through the switch.
func TestProcessNVLSCountsShared(t *testing.T) {
	spec := &procSpec{N: 2, Fabric: device.NVSwitch, BufferBytes: 4096, LamportBytes: 1024, Blocks: 2, Timeout: 20 * time.Second,
		Calls: []procCall{{Op: device.OpAllReduce, Algo: NVLS, DType: dtype.F32, Count: 512}}}
	g := startGroup(t, spec, nil)
	before := g.c.Multicast().Counts()
	_, err := runCalls(spec, []*Rank{g.c.Rank(0)}, 1)
	require.NoError(t, err)
	g.results(t)
	after := g.c.Multicast().Counts()
	require.EqualValues(t, 512, after.LoadReduced-before.LoadReduced, "each rank load-reduces its half")
	require.EqualValues(t, 512, after.Stored-before.Stored)
	g.finish(t)
}

// TestProcessRankKilled SIGKILLs rank 1 while rank 0 waits for it in a collective: the
// driver's pidfd poller marks it failed in shared memory, and rank 0's wait ends at once,
// naming the dead rank, not at its deadline. Also where rank 0's calls run on its host
// goroutine (blocking: AllReduceWait on an idle stream).
func TestProcessRankKilled(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("blocking=%v", blocking), func(t *testing.T) {
			spec := &procSpec{N: 2, Fabric: device.NVSwitch, BufferBytes: 4096, LamportBytes: 1024, Blocks: 2, Timeout: 20 * time.Second,
				Calls: []procCall{
					{Op: device.OpAllReduce, Algo: OneShot, DType: dtype.F32, Count: 256},
					{Op: device.OpAllReduce, Algo: TwoShot, DType: dtype.F32, Count: 256},
				}, StopAt: 1, Blocking: blocking}
			g := startGroup(t, spec, map[int]string{1: roleStall})
			s, err := g.c.Rank(0).Device().NewStream("comm", 0)
			require.NoError(t, err)
			_, err = runCallsOn(spec, []*Rank{g.c.Rank(0)}, []*device.Stream{s}, 1)
			require.NoError(t, err)
			g.results(t) // rank 1 finished its first call and stalls
			go func() {
				time.Sleep(50 * time.Millisecond) // rank 0 sleeps in the second call by then
				g.expectExit.Store(true)
				if err := g.kids.Signal(g.pids[1], 9); err != nil {
					t.Error(err)
				}
			}()
			start := time.Now()
			_, err = runCallsOn(spec, []*Rank{g.c.Rank(0)}, []*device.Stream{s}, 2)
			took := time.Since(start)
			t.Logf("rank 0's call ended %v after it began: %v", took, err)
			require.Error(t, err)
			require.Less(t, took, spec.Timeout/2, "the wait ended at its deadline, not at the death")
			require.ErrorContains(t, err, "rank 1's process exited (last collective seq 0 allreduce f32 count 256 (oneshot), done)")
			requireHostLaunches(t, s, blocking, 2)
			g.finishAfterFailure(t)
		})
	}
}

// TestProcessRankStopped SIGSTOPs rank 1 (a hang, not a death): rank 0's call fails at the
// deadline, naming the rank that did not arrive; also where the call runs on rank 0's
// host goroutine.
func TestProcessRankStopped(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("blocking=%v", blocking), func(t *testing.T) {
			spec := &procSpec{N: 2, Fabric: device.NVSwitch, BufferBytes: 4096, LamportBytes: 1024, Blocks: 2, Timeout: 300 * time.Millisecond,
				Calls:  []procCall{{Op: device.OpAllReduce, Algo: OneShot, DType: dtype.F32, Count: 256}},
				StopAt: 0, Blocking: blocking}
			g := startGroup(t, spec, map[int]string{1: roleStall})
			g.expectExit.Store(true)
			require.NoError(t, g.kids.Signal(g.pids[1], 19)) // SIGSTOP
			s, err := g.c.Rank(0).Device().NewStream("comm", 0)
			require.NoError(t, err)
			_, err = runCallsOn(spec, []*Rank{g.c.Rank(0)}, []*device.Stream{s}, 1)
			require.ErrorIs(t, err, device.ErrDeadline)
			require.ErrorContains(t, err, "rank(s) [1] did not arrive within 300ms")
			requireHostLaunches(t, s, blocking, 1)
			require.NoError(t, g.kids.Signal(g.pids[1], 9))
			g.finishAfterFailure(t)
		})
	}
}

// requireHostLaunches checks that s ran want kernels on the host if blocking, none if not.
func requireHostLaunches(t *testing.T, s *device.Stream, blocking bool, want uint64) {
	t.Helper()
	if !blocking {
		want = 0
	}
	require.Equal(t, want, s.HostLaunches(), "kernels run on the host")
}

// TestProcessGraphBuffers captures one-shot and two-shot all-reduces into graphs in every
// rank process, registers the inputs' handles through the bootstrap and replays: the ranks
// read each other's inputs in place (no staging copy) and give the in-process bits.
func TestProcessGraphBuffers(t *testing.T) {
	spec := &procSpec{N: 4, Fabric: device.NVSwitch, BufferBytes: 4096, LamportBytes: 1024, Blocks: 2, Timeout: 20 * time.Second,
		Graph: true, Replays: 3, Calls: []procCall{
			{Op: device.OpAllReduce, Algo: OneShot, DType: dtype.F32, Count: 700},
			{Op: device.OpAllReduce, Algo: TwoShot, DType: dtype.BF16, Count: 3000},
		}}
	node, err := spec.node()
	require.NoError(t, err)
	defer node.Close()
	ref, err := New(node, spec.config(nil))
	require.NoError(t, err)
	defer ref.Close()
	ranks := make([]*Rank, spec.N)
	for r := range ranks {
		ranks[r] = ref.Rank(r)
	}
	want, err := runGraphCalls(spec, ref, ranks, device.InProcessMemory{})
	require.NoError(t, err)

	g := startGroup(t, spec, nil)
	mine, err := runGraphCalls(spec, g.c, []*Rank{g.c.Rank(0)}, device.SharedMemory{})
	require.NoError(t, err)
	require.EqualValues(t, spec.Replays*(700*4+3000*2), g.c.GraphBytesSaved(), "rank 0's replays copied nothing into staging")
	got := g.results(t)
	got[0] = mine[0]
	for r := range spec.N {
		require.Equal(t, want[r], got[r], "rank %d: the replays' results differ from the in-process ones", r)
	}
	g.finish(t)
}

// TestProcessGraphInputNotShareable: across processes, a captured input that is not
// shareable memory is an error that names the rank and the buffer, on every rank.
func TestProcessGraphInputNotShareable(t *testing.T) {
	spec := &procSpec{N: 2, Fabric: device.NVSwitch, BufferBytes: 4096, LamportBytes: 1024, Blocks: 2, Timeout: 20 * time.Second,
		Graph: true, Replays: 1, Calls: []procCall{{Op: device.OpAllReduce, Algo: OneShot, DType: dtype.F32, Count: 64}}}
	g := startGroup(t, spec, nil)
	_, err := runGraphCalls(spec, g.c, []*Rank{g.c.Rank(0)}, device.InProcessMemory{})
	require.ErrorContains(t, err, "rank 0: the input of captured collective 0 cannot be shared (allocate it with Config.Memory)")
	g.requireFailureReport(t, 1, "rank 0 captured 0 collectives with inputs it could share, rank 1 captured 1")
	g.expectExit.Store(true)
	g.finishAfterFailure(t)
}

// TestProcessMismatch: a rank process that issues another call than rank 0 under the same
// sequence number is caught from the descriptors in the control buffers, at once, and the
// error names both calls.
func TestProcessMismatch(t *testing.T) {
	spec := &procSpec{N: 2, Fabric: device.NVSwitch, BufferBytes: 4096, LamportBytes: 1024, Blocks: 2, Timeout: 20 * time.Second,
		Calls: []procCall{{Op: device.OpAllReduce, Algo: OneShot, DType: dtype.F32, Count: 256}}}
	g := startGroup(t, spec, map[int]string{1: roleOther})
	start := time.Now()
	_, err := runCalls(spec, []*Rank{g.c.Rank(0)}, 1)
	require.Less(t, time.Since(start), spec.Timeout/2, "a mismatch must not wait for the deadline")
	require.ErrorContains(t, err, "collective mismatch at seq 0: rank 0 issued allreduce f32 count 256 (oneshot), rank 1 issued allreduce f32 count 512 (oneshot)")
	g.requireFailureReport(t, 1, "collective mismatch at seq 0")
	g.expectExit.Store(true)
	g.finishAfterFailure(t)
}
