package comm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestAllReduceMatchesReference runs every algorithm for every world size, several element
// counts (including 1 and counts not divisible by n or the vector width) and both dtypes.
func TestAllReduceMatchesReference(t *testing.T) {
	counts := []int{1, 7, 4096 + 3, 1<<20/4 + 5}
	if testing.Short() || raceDetector { // TestAllReduceChunks runs messages beyond a chunk under -race
		counts = counts[:3]
	}
	for _, n := range []int{1, 2, 3, 4, 6, 8} {
		g := newGroup(t, n, device.NVSwitch, Config{})
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			for _, count := range counts {
				ins, outs := g.alloc(t, dt, count), g.alloc(t, dt, count)
				for _, algo := range Algos {
					t.Run(fmt.Sprintf("n=%d/%v/count=%d/%v", n, dt, count, algo), func(t *testing.T) {
						Fill(ins, count, uint64(n))
						for r := range n {
							require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, ins[r], outs[r], count))
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
}

// TestAllReduceChunks drives messages far larger than the registered buffers through every
// algorithm, in place (out = in), so chunk boundaries and buffer reuse are exercised.
func TestAllReduceChunks(t *testing.T) {
	const count = 40_000 + 3
	g := newGroup(t, 4, device.NVSwitch, Config{BufferBytes: 16 << 10, LamportBytes: 4 << 10})
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
		for _, algo := range Algos {
			t.Run(fmt.Sprintf("%v/%v", dt, algo), func(t *testing.T) {
				orig, bufs := g.alloc(t, dt, count), g.alloc(t, dt, count)
				Fill(orig, count, 1)
				for r := range bufs {
					copy(bufs[r].Uint16s(), orig[r].Uint16s())
				}
				for r := range 4 {
					require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, bufs[r], bufs[r], count))
				}
				for _, err := range g.syncAll() {
					require.NoError(t, err)
				}
				checkAllReduce(t, orig, bufs, count)
			})
		}
	}
}

// TestAllReduceBackToBack issues 1000 calls of mixed sizes and algorithms without waiting
// in between, so fast ranks run ahead into later barriers and flag-free phases while slow
// ones still read; every result must be right.
func TestAllReduceBackToBack(t *testing.T) {
	const n, calls = 4, 1000
	g := newGroup(t, n, device.NVSwitch, Config{BufferBytes: 64 << 10, LamportBytes: 8 << 10})
	rng := rand.New(rand.NewPCG(7, 7))
	type job struct {
		algo  Algo
		count int
		ins   []*device.Buffer
		outs  []*device.Buffer
	}
	jobs := make([]job, calls)
	for i := range jobs {
		count := []int{1, 5, 100, 3000, 20000}[rng.IntN(5)]
		dt := []dtype.DType{dtype.F32, dtype.BF16}[rng.IntN(2)]
		j := job{algo: append([]Algo{Auto}, Algos...)[rng.IntN(len(Algos)+1)], count: count,
			ins: g.alloc(t, dt, count), outs: g.alloc(t, dt, count)}
		Fill(j.ins, count, uint64(i))
		jobs[i] = j
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
		t.Run(fmt.Sprintf("call%d", i), func(t *testing.T) { checkAllReduce(t, j.ins, j.outs, j.count) })
	}
}

// TestAllGather: every rank gets every rank's input in rank order, for one-shot (switch
// fabrics, or two GPUs on PCIe) and the ring (PCIe beyond two GPUs), in chunks smaller than
// the message, f32 and bf16, several calls back to back on the same buffers.
func TestAllGather(t *testing.T) {
	for _, c := range []struct {
		fabric device.Fabric
		n      int
		algo   Algo
	}{
		{device.NVSwitch, 1, OneShot}, {device.NVSwitch, 3, OneShot}, {device.NVSwitch, 8, OneShot},
		{device.PCIe, 2, OneShot}, {device.PCIe, 3, Ring}, {device.PCIe, 4, Ring}, {device.PCIe, 8, Ring},
	} {
		for _, dt := range []dtype.DType{dtype.BF16, dtype.F32} {
			for _, count := range []int{1, 9, 5000} {
				t.Run(fmt.Sprintf("%v/n=%d/%v/count=%d", c.fabric, c.n, dt, count), func(t *testing.T) {
					g := newGroup(t, c.n, c.fabric, Config{BufferBytes: 4096})
					ins, outs := g.alloc(t, dt, count), g.alloc(t, dt, c.n*count)
					for call := range 3 {
						Fill(ins, count, uint64(3+call))
						for r := range c.n {
							require.NoError(t, g.c.Rank(r).AllGather(g.streams[r], ins[r], outs[r], count))
						}
						for _, err := range g.syncAll() {
							require.NoError(t, err)
						}
						for r := range c.n {
							for p := range c.n {
								for i := range count {
									want, got := element(ins[p], i), element(outs[r], p*count+i)
									if want != got {
										require.Failf(t, "all-gather", "call %d: rank %d, from rank %d, element %d: got %v, want %v", call, r, p, i, got, want)
									}
								}
							}
						}
					}
					if c.n > 1 {
						last, ok := g.c.Recorder(0).Last()
						require.True(t, ok)
						require.Equal(t, c.algo, last.Algo)
					}
				})
			}
		}
	}
}

// element is element i of a buffer as its raw bits, whatever the dtype.
func element(b *device.Buffer, i int) uint32 {
	if b.DType() == dtype.F32 {
		return math.Float32bits(b.Float32s()[i])
	}
	return uint32(b.Uint16s()[i])
}

// TestSelection: a forced algorithm wins over the environment, the environment over the
// table, the table over the built-in rule; unavailable table entries fall back.
func TestSelection(t *testing.T) {
	g := newGroup(t, 4, device.NVLinkMesh, Config{})
	require.Equal(t, OneShot, g.c.Pick(1024).Algo)
	require.Equal(t, TwoShot, g.c.Pick(1<<20).Algo)
	table := &Table{Source: "test"}
	require.NoError(t, table.Set(TableRow{World: 4, Bucket: Bucket(1024), Choice: Choice{Algo: Ring}}))
	require.NoError(t, table.Set(TableRow{World: 4, Bucket: Bucket(1 << 20), Choice: Choice{Algo: NVLS}})) // not on this fabric
	g.c.SetTable(table)
	require.Equal(t, Ring, g.c.Pick(1000).Algo)
	require.Equal(t, TwoShot, g.c.Pick(1<<20).Algo, "nvls is unavailable without a switch")
	pcie := newGroup(t, 4, device.PCIe, Config{})
	require.Equal(t, Ring, pcie.c.Pick(64).Algo)

	t.Setenv(EnvAlgo, "lamport")
	c, err := New(g.node, Config{Table: table})
	require.NoError(t, err)
	require.Equal(t, Lamport, c.Pick(1000).Algo)
	require.NoError(t, c.Close())
	t.Setenv(EnvAlgo, "tree")
	c, err = New(g.node, Config{Table: table})
	require.NoError(t, err)
	require.Equal(t, Tree, c.Pick(1<<20).Algo)
	require.NoError(t, c.Close())
	c, err = New(g.node, Config{Algo: TwoShot})
	require.NoError(t, err)
	require.Equal(t, TwoShot, c.Pick(10).Algo)
	require.NoError(t, c.Close())
}

// TestAutotune fills a table for every bucket in range, caches it, and reuses the cache.
func TestAutotune(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{BufferBytes: 64 << 10})
	path := t.TempDir() + "/tune.json"
	o := TuneOptions{MinBytes: 64, MaxBytes: 16 << 10, Measure: MeasureOptions{Target: time.Millisecond}}
	table, fresh, err := g.c.TunedTable(path, g.streams, o)
	require.NoError(t, err)
	require.True(t, fresh)
	require.Equal(t, "tuned:"+g.c.Fingerprint(dtype.F32), table.Source)
	for b := Bucket(64); b <= Bucket(16<<10); b++ {
		a, ok := table.Pick(2, BucketBytes(b))
		require.True(t, ok)
		require.True(t, g.c.Available(a.Algo), "bucket %d picked %v", b, a)
	}
	for _, r := range table.Rows { // what was measured, by candidate; the pick is the fastest
		pick := r.MicrosPerCall[r.Choice.String()]
		require.Positive(t, pick, "bucket %d: %v was measured", r.Bucket, r.Choice)
		for name, us := range r.MicrosPerCall {
			require.GreaterOrEqual(t, us, pick, "bucket %d: %s is faster than the pick", r.Bucket, name)
		}
	}
	again, fresh, err := g.c.TunedTable(path, g.streams, o)
	require.NoError(t, err)
	require.False(t, fresh, "the cached table should be reused")
	require.Equal(t, table, again)
	o.MaxBytes = 64 << 10 // a range the cache does not cover is tuned again
	_, fresh, err = g.c.TunedTable(path, g.streams, o)
	require.NoError(t, err)
	require.True(t, fresh)
}

// TestRecordedWait: a rank that reaches a collective late leaves its peers waiting, and
// their records say for how long; its own record shows next to no wait. Every algorithm
// that synchronises (barriers, the flag-free slots, the tree's flags) is timed.
func TestRecordedWait(t *testing.T) {
	const late = 30 * time.Millisecond
	for _, algo := range []Algo{OneShot, TwoShot, Ring, NVLS, Lamport, Tree} {
		t.Run(algo.String(), func(t *testing.T) {
			g := newGroup(t, 2, device.NVSwitch, Config{Algo: algo})
			ins, outs := g.alloc(t, dtype.F32, 64), g.alloc(t, dtype.F32, 64)
			before := time.Now()
			// Rank 1 holds back until rank 0's call has begun, then for late: on a loaded
			// machine rank 0's kernel may itself start after a fixed sleep has run out.
			require.NoError(t, g.streams[1].HostFunc(func() {
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
					if rec, ok := g.c.Recorder(0).Last(); ok && rec.State == Running {
						break
					}
				}
				time.Sleep(late)
			}))
			for r := range 2 {
				require.NoError(t, g.c.Rank(r).AllReduce(g.streams[r], ins[r], outs[r], 64))
			}
			for _, err := range g.syncAll() {
				require.NoError(t, err)
			}
			early, ok := g.c.Recorder(0).Last()
			require.True(t, ok)
			tardy, ok := g.c.Recorder(1).Last()
			require.True(t, ok)
			require.GreaterOrEqual(t, early.Wait, late/2, "rank 0 waited for rank 1")
			require.LessOrEqual(t, early.Wait, early.End.Sub(early.Start))
			// the times, kept as the call clock's offsets, read back as wall times of this run
			require.WithinRange(t, early.Start, before.Add(-time.Millisecond), early.End)
			require.WithinRange(t, early.End, early.Start, time.Now().Add(time.Millisecond))
			require.Less(t, tardy.Wait, early.Wait, "rank 1 arrived last")
		})
	}
}
