package comm

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// newHostsGroup is newGroup on a node of hosts hosts of perHost devices each.
func newHostsGroup(t testing.TB, hosts, perHost int, cfg Config) *group {
	t.Helper()
	return newNodeGroup(t, device.NodeConfig{Devices: hosts * perHost, Hosts: hosts, SMs: 2}, cfg)
}

// hostLayouts are the hosts × ranks per host the two-level tests run.
var hostLayouts = [][2]int{{2, 1}, {2, 2}, {2, 3}, {2, 4}, {4, 2}}

// TestTwoLevelMatchesReference: every layout, odd and even counts (1, counts not divisible
// by the ranks of a host or the vector width, several blocks), f32 and bf16, against the
// float64 oracle, every rank holding rank 0's bits.
func TestTwoLevelMatchesReference(t *testing.T) {
	counts := []int{1, 7, 4096 + 3, 100_000 + 1}
	if raceDetector {
		counts = counts[:3]
	}
	for _, hl := range hostLayouts {
		g := newHostsGroup(t, hl[0], hl[1], Config{})
		n := g.c.Size()
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			for _, count := range counts {
				t.Run(fmt.Sprintf("%dx%d/%v/count=%d", hl[0], hl[1], dt, count), func(t *testing.T) {
					ins, outs := g.alloc(t, dt, count), g.alloc(t, dt, count)
					Fill(ins, count, uint64(n+count))
					for r := range n {
						require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], TwoLevel, ins[r], outs[r], count))
					}
					for r, err := range g.syncAll() {
						require.NoError(t, err, "rank %d", r)
					}
					checkAllReduce(t, ins, outs, count)
				})
			}
		}
	}
}

// TestTwoLevelSummationOrder: the result is Σ_h (Σ_l in(h, l)) in f32, host by host, each
// host's ranks in local order: the reference loop the doc comment states, bit for bit.
func TestTwoLevelSummationOrder(t *testing.T) {
	const count = 777
	g := newHostsGroup(t, 2, 3, Config{})
	ins, outs := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
	Fill(ins, count, 5)
	for r := range 6 {
		require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], TwoLevel, ins[r], outs[r], count))
	}
	for _, err := range g.syncAll() {
		require.NoError(t, err)
	}
	for i := range count {
		var want float32
		for h := range 2 {
			var host float32
			for l := range 3 {
				host += ins[3*h+l].Float32s()[i]
			}
			want += host
		}
		for r := range 6 {
			require.Equal(t, want, outs[r].Float32s()[i], "rank %d element %d", r, i)
		}
	}
}

// TestTwoLevelChunks: messages far larger than the registered buffers, in place, so chunk
// boundaries and buffer reuse (fewer blocks in the last chunk) are exercised.
func TestTwoLevelChunks(t *testing.T) {
	const count = 40_000 + 3
	g := newHostsGroup(t, 2, 2, Config{BufferBytes: 16 << 10})
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			orig, bufs := g.alloc(t, dt, count), g.alloc(t, dt, count)
			Fill(orig, count, 1)
			for r := range bufs {
				copy(bufs[r].Uint16s(), orig[r].Uint16s())
			}
			for r := range 4 {
				require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], TwoLevel, bufs[r], bufs[r], count))
			}
			for _, err := range g.syncAll() {
				require.NoError(t, err)
			}
			checkAllReduce(t, orig, bufs, count)
		})
	}
}

// TestTwoLevelBackToBack issues 1000 calls without waiting in between, the two-level
// all-reduce mixed with the flat algorithms and auto, so that fast ranks run into the next
// call (of another algorithm, which reuses the same buffers) while slow ones still read.
func TestTwoLevelBackToBack(t *testing.T) {
	const calls = 1000
	for _, hl := range [][2]int{{2, 2}, {4, 2}} {
		t.Run(fmt.Sprintf("%dx%d", hl[0], hl[1]), func(t *testing.T) {
			g := newHostsGroup(t, hl[0], hl[1], Config{BufferBytes: 64 << 10, LamportBytes: 8 << 10})
			n := g.c.Size()
			rng := rand.New(rand.NewPCG(9, uint64(n)))
			algos := []Algo{Auto, TwoLevel, TwoLevel, Ring, OneShot, TwoShot, Lamport, Tree}
			type job struct {
				algo      Algo
				count     int
				ins, outs []*device.Buffer
			}
			jobs := make([]job, calls)
			for i := range jobs {
				count := []int{1, 5, 100, 3000, 20000}[rng.IntN(5)]
				dt := []dtype.DType{dtype.F32, dtype.BF16}[rng.IntN(2)]
				jobs[i] = job{algo: algos[rng.IntN(len(algos))], count: count, ins: g.alloc(t, dt, count), outs: g.alloc(t, dt, count)}
				Fill(jobs[i].ins, count, uint64(i))
			}
			for _, j := range jobs {
				for r := range n {
					require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], j.algo, j.ins[r], j.outs[r], j.count))
				}
			}
			for _, err := range g.syncAll() {
				require.NoError(t, err)
			}
			for i, j := range jobs {
				checkAllReduce(t, j.ins, j.outs, j.count)
				if t.Failed() {
					t.Fatalf("call %d (%v, %d elements) went wrong", i, j.algo, j.count)
				}
			}
		})
	}
}

// TestTwoLevelMissingRankDeadline: a rank that never issues the call is named by every
// rank's error, whether it waits on it directly (its host or its rail) or not.
func TestTwoLevelMissingRankDeadline(t *testing.T) {
	g := newHostsGroup(t, 2, 2, Config{Timeout: 300 * time.Millisecond})
	bufs := g.alloc(t, dtype.F32, 1000)
	for r := range 4 {
		require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], TwoLevel, bufs[r], bufs[r], 1000))
	}
	for r := range 3 {
		require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], TwoLevel, bufs[r], bufs[r], 1000))
	}
	start := time.Now()
	errs := g.syncAll()
	require.Less(t, time.Since(start), 10*time.Second)
	require.NoError(t, errs[3])
	for r := range 3 {
		require.Error(t, errs[r], "rank %d", r)
		require.Contains(t, errs[r].Error(), "rank(s) [3] did not arrive")
		require.Contains(t, errs[r].Error(), "\n  rank 3: seq 0 allreduce twolevel f32 count 1000, done")
	}
}

// TestTwoLevelFaults: a skipped call and a corrupted flag are named quickly, with the rank.
func TestTwoLevelFaults(t *testing.T) {
	for _, tc := range []struct {
		kind FaultKind
		want string
	}{
		{FaultSkip, "rank 3 already began seq 2"},
		{FaultCorrupt, "rank 3 wrote 0x"},
		{FaultStall, "rank(s) [3] did not arrive"},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			fi := NewFaultInjector(Fault{Rank: 3, Call: 2, Kind: tc.kind})
			g := newHostsGroup(t, 2, 2, Config{Timeout: 500 * time.Millisecond, Fault: fi})
			bufs := g.alloc(t, dtype.F32, 1000)
			for range 3 { // with a skip, rank 3's third call is the one its peers' second meets
				for r := range 4 {
					if err := g.c.Rank(r).AllReduceAlgo(g.streams[r], TwoLevel, bufs[r], bufs[r], 1000); err != nil {
						require.ErrorIs(t, err, ErrFailed)
					}
				}
			}
			g.syncAll()
			require.True(t, fi.Fired())
			require.ErrorContains(t, g.c.Err(), tc.want)
		})
	}
}

// TestTwoLevelSelection: on several hosts the built-in rule runs the two-level all-reduce
// and NVLS is gone (no multicast across hosts); a table made for another number of hosts
// is not consulted; on one host the algorithm is refused with the reason.
func TestTwoLevelSelection(t *testing.T) {
	g := newHostsGroup(t, 2, 2, Config{})
	require.Equal(t, 2, g.c.Hosts())
	require.False(t, g.c.HasNVLS())
	for _, bytes := range []int{4, 64 << 10, 64 << 20} {
		require.Equal(t, TwoLevel, g.c.Pick(bytes).Algo)
	}
	oneHost := &Table{Source: "one host", Rows: []TableRow{{World: 4, Bucket: 0, Choice: Choice{Algo: OneShot}}}}
	g.c.SetTable(oneHost)
	require.Equal(t, TwoLevel, g.c.Pick(1).Algo, "a table of one host must not steer a node of two")
	g.c.SetTable(&Table{Source: "two hosts", Hosts: 2, Rows: []TableRow{{World: 4, Bucket: 0, Choice: Choice{Algo: Ring}}}})
	require.Equal(t, Ring, g.c.Pick(1).Algo)

	single := newGroup(t, 4, device.NVSwitch, Config{})
	require.False(t, single.c.Available(TwoLevel))
	buf := single.alloc(t, dtype.F32, 8)
	require.ErrorContains(t, single.c.Rank(0).AllReduceAlgo(single.streams[0], TwoLevel, buf[0], buf[0], 8),
		"comm: rank 0 allreduce: algorithm twolevel: it needs ranks on two hosts or more; all 4 are on one")
	_, err := New(single.node, Config{Algo: TwoLevel})
	require.ErrorContains(t, err, "algorithm twolevel forced, but it needs ranks on two hosts or more")

	uneven := newHostsGroup(t, 2, 2, Config{})
	c, err := New(uneven.node, Config{Devices: []int{0, 1, 2}})
	require.NoError(t, err)
	defer c.Close()
	require.False(t, c.Available(TwoLevel))
	require.Equal(t, Ring, c.Pick(1).Algo)
}

func TestOffered(t *testing.T) {
	require.Equal(t, Offered(device.NVSwitch, true, 0, 8), Offered(device.NVSwitch, true, 1, 8), "hosts 0 is one host")
	require.Equal(t, []Algo{TwoLevel, OneShot, TwoShot, Ring}, Offered(device.NVSwitch, true, 2, 16))
	require.Equal(t, []Algo{TwoLevel, Ring}, Offered(device.PCIe, false, 2, 8))
}

// TestTwoLevelAutotune: on several hosts the autotuner measures the two-level all-reduce
// too, and its table records the hosts, so that a node of one host would not consult it.
func TestTwoLevelAutotune(t *testing.T) {
	g := newHostsGroup(t, 2, 2, Config{})
	tab, err := g.c.Autotune(g.streams, TuneOptions{DType: dtype.F32, MinBytes: 4 << 10, MaxBytes: 8 << 10,
		Measure: MeasureOptions{Rounds: 2, Budget: 20 * time.Millisecond}})
	require.NoError(t, err)
	require.Equal(t, 2, tab.Hosts)
	require.Contains(t, tab.Source, "/hosts2")
	require.Equal(t, []int{4}, tab.Worlds())
	single := newGroup(t, 4, device.NVSwitch, Config{})
	single.c.SetTable(tab)
	require.Equal(t, DefaultRule(4, 4<<10, device.NVSwitch), single.c.Pick(4<<10).Algo, "a table of two hosts must not steer one")
}
