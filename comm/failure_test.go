package comm

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestMissingRankDeadline: rank 3 never issues the collective; the others must fail by the
// deadline with an error that names rank 3 and what it last did, not hang.
func TestMissingRankDeadline(t *testing.T) {
	for _, algo := range Algos {
		t.Run(algo.String(), func(t *testing.T) {
			g := newGroup(t, 4, device.NVSwitch, Config{Timeout: 300 * time.Millisecond})
			bufs := g.alloc(t, dtype.F32, 1000)
			for r := range 4 { // one good call first, so rank 3 has a history
				require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, bufs[r], bufs[r], 1000))
			}
			for r := range 3 {
				require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, bufs[r], bufs[r], 1000))
			}
			start := time.Now()
			errs := g.syncAll()
			require.Less(t, time.Since(start), 10*time.Second)
			require.NoError(t, errs[3])
			var named bool
			for r := range 3 {
				require.Error(t, errs[r], "rank %d", r)
				msg := errs[r].Error()
				require.Contains(t, msg, "rank(s) [3] did not arrive")
				require.Contains(t, msg, "\n  rank 3: seq 0 allreduce "+algo.String()+" f32 count 1000, done")
				if errors.Is(errs[r], device.ErrDeadline) {
					named = true // the rank whose own wait expired
				} else {
					require.ErrorIs(t, errs[r], ErrFailed, "rank %d: %v", r, errs[r])
				}
			}
			require.True(t, named, "no rank named the missing one: %v", errs)
			require.ErrorIs(t, g.c.Rank(0).AllReduce(g.streams[0], bufs[0], bufs[0], 10), ErrFailed)
		})
	}
}

// TestMissingRankNoHistory: the error says so when the missing rank never issued anything.
func TestMissingRankNoHistory(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{Timeout: 200 * time.Millisecond})
	bufs := g.alloc(t, dtype.F32, 10)
	require.NoError(t, g.c.Rank(0).AllReduce(g.streams[0], bufs[0], bufs[0], 10))
	err := g.streams[0].Synchronize()
	require.ErrorContains(t, err, "rank(s) [1] did not arrive within 200ms: deadline exceeded")
	require.ErrorContains(t, err, "\n  rank 1: no collective started")
	rec, ok := g.c.Recorder(0).Last()
	require.True(t, ok)
	require.Equal(t, Failed, rec.State)
	require.Equal(t, "one-shot inputs staged", rec.Where)
}

// TestMismatchedCalls: ranks that issue different sizes or dtypes under one sequence number
// get an error naming both, quickly, whatever algorithm each side would pick.
func TestMismatchedCalls(t *testing.T) {
	cases := []struct {
		name           string
		t0, t1         dtype.DType
		count0, count1 int
		want0, want1   string // what rank 0's side and the others' side issued
	}{
		{"count", dtype.F32, dtype.F32, 100, 200, "allreduce f32 count 100 (oneshot)", "allreduce f32 count 200 (oneshot)"},
		{"dtype", dtype.F32, dtype.BF16, 100, 100, "allreduce f32 count 100", "allreduce bf16 count 100"},
		{"algorithm follows size", dtype.F32, dtype.F32, 256, 1 << 20, "count 256 (oneshot)", "count 1048576 (twoshot)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroup(t, 4, device.NVSwitch, Config{Timeout: 20 * time.Second})
			ins := [][]*device.Buffer{g.alloc(t, tc.t0, tc.count0), g.alloc(t, tc.t1, tc.count1)}
			start := time.Now()
			enqueued := make([]error, 4)
			for r := range 4 {
				side := min(r, 1)
				count := []int{tc.count0, tc.count1}[side]
				// A rank may already be refused here: its peers can run, notice the mismatch
				// and fail the communicator before this host loop reaches it.
				enqueued[r] = g.c.Rank(r).AllReduce(g.streams[r], ins[side][r], ins[side][r], count)
			}
			errs := g.syncAll()
			for r, err := range enqueued {
				if err != nil {
					require.ErrorIs(t, err, ErrFailed)
					errs[r] = err
				}
			}
			require.Less(t, time.Since(start), 10*time.Second, "a mismatch must not wait for the deadline")
			var found bool
			for r, err := range errs {
				require.Error(t, err, "rank %d", r)
				// Whichever rank notices first names itself and the peer it compared with;
				// the others fail with its error.
				msg := err.Error()
				if strings.Contains(msg, "collective mismatch at seq 0") && strings.Contains(msg, tc.want0) && strings.Contains(msg, tc.want1) {
					found = true
				}
			}
			require.True(t, found, "no error names both sides: %v", errors.Join(errs...))
		})
	}
}

func TestBadArguments(t *testing.T) {
	g := newGroup(t, 2, device.NVLinkMesh, Config{})
	r0 := g.c.Rank(0)
	own := g.alloc(t, dtype.F32, 8)
	other, err := g.c.Rank(1).Device().Alloc(dtype.F32, 8)
	require.NoError(t, err)
	bf, err := r0.Device().Alloc(dtype.BF16, 8)
	require.NoError(t, err)
	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"stream on another device", func() error { return r0.AllReduce(g.streams[1], own[0], own[0], 8) }, "stream is on device 1, the rank is on device 0"},
		{"input on another device", func() error { return r0.AllReduce(g.streams[0], other, own[0], 8) }, "input device 1 buffer of 8 f32 is not the rank's own memory"},
		{"count too large", func() error { return r0.AllReduce(g.streams[0], own[0], own[0], 9) }, "input holds only 8 elements"},
		{"negative count", func() error { return r0.AllReduce(g.streams[0], own[0], own[0], -1) }, "negative count"},
		{"dtype differs", func() error { return r0.AllReduce(g.streams[0], own[0], bf, 8) }, "input is f32, output is bf16"},
		{"nvls without a switch", func() error { return r0.AllReduceAlgo(g.streams[0], NVLS, own[0], own[0], 8) }, "nvls is not available on a nvlink fabric"},
		{"all-gather output too small", func() error { return r0.AllGather(g.streams[0], own[0], own[0], 8) }, "output holds 8 elements, needs 16"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorContains(t, err, "comm: rank 0")
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err = New(g.node, Config{Algo: NVLS})
	require.ErrorContains(t, err, "nvls forced, but the nvlink fabric has no multicast switch")
	_, err = New(g.node, Config{Devices: []int{0, 0}})
	require.ErrorContains(t, err, "device 0 already belongs to another rank")
	t.Setenv(EnvAlgo, "fastest")
	_, err = New(g.node, Config{})
	require.ErrorContains(t, err, "$TPSLICE_ALLREDUCE_ALGO")
}

// TestCollectiveStats: the running totals count every call, beyond the recorder's ring.
func TestCollectiveStats(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{})
	bufs := g.alloc(t, dtype.BF16, 100)
	for range recorderDepth + 10 {
		for r := range 2 {
			require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], TwoShot, bufs[r], bufs[r], 100))
		}
	}
	for _, err := range g.syncAll() {
		require.NoError(t, err)
	}
	require.Equal(t, []CollectiveStat{{Op: "allreduce", Algo: TwoShot, Calls: recorderDepth + 10, Bytes: (recorderDepth + 10) * 200}}, g.c.Recorder(1).Stats())
}

// TestCollectiveStatsInterleaved: calls that alternate algorithms and ops are each counted
// under their own op and algorithm, not under the previous call's.
func TestCollectiveStatsInterleaved(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{})
	in, out := g.alloc(t, dtype.F32, 64), g.alloc(t, dtype.F32, 128)
	const k = 5
	for range k {
		for r := range 2 {
			require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], OneShot, in[r], in[r], 64))
			require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], TwoShot, in[r], in[r], 32))
			require.NoError(t, g.c.Rank(r).AllGather(g.streams[r], in[r], out[r], 64))
		}
	}
	for _, err := range g.syncAll() {
		require.NoError(t, err)
	}
	stats := g.c.Recorder(0).Stats()
	slices.SortFunc(stats, func(a, b CollectiveStat) int { return strings.Compare(a.Op+a.Algo.String(), b.Op+b.Algo.String()) })
	require.Len(t, stats, 3)
	require.Equal(t, CollectiveStat{Op: "allgather", Algo: stats[0].Algo, Calls: k, Bytes: k * 256}, stats[0])
	require.Equal(t, []CollectiveStat{{Op: "allreduce", Algo: OneShot, Calls: k, Bytes: k * 256}, {Op: "allreduce", Algo: TwoShot, Calls: k, Bytes: k * 128}}, stats[1:])
}
