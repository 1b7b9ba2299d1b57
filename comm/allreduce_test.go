package comm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestAllReduceMatchesReference runs every algorithm for every world size, several element
// counts (including 1 and counts not divisible by n or the vector width) and both dtypes.
func TestAllReduceMatchesReference(t *testing.T) {
	counts := []int{1, 7, 4096 + 3, 1<<20/4 + 5}
	if testing.Short() {
		counts = counts[:3]
	}
	for _, n := range []int{1, 2, 3, 4, 6, 8} {
		g := newGroup(t, n, device.NVSwitch, Config{})
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			for _, count := range counts {
				ins, outs := g.alloc(t, dt, count), g.alloc(t, dt, count)
				for _, algo := range Algos {
					t.Run(fmt.Sprintf("n=%d/%v/count=%d/%v", n, dt, count, algo), func(t *testing.T) {
						rng := rand.New(rand.NewPCG(uint64(n), uint64(count)))
						vals := fill(rng, ins, count)
						for r := range n {
							require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, ins[r], outs[r], count))
						}
						for r, err := range g.syncAll() {
							require.NoError(t, err, "rank %d", r)
						}
						checkAllReduce(t, vals, outs, count)
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
				bufs := g.alloc(t, dt, count)
				vals := fill(rand.New(rand.NewPCG(1, 2)), bufs, count)
				for r := range 4 {
					require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, bufs[r], bufs[r], count))
				}
				for _, err := range g.syncAll() {
					require.NoError(t, err)
				}
				checkAllReduce(t, vals, bufs, count)
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
		vals  [][]float64
	}
	jobs := make([]job, calls)
	for i := range jobs {
		count := []int{1, 5, 100, 3000, 20000}[rng.IntN(5)]
		dt := []dtype.DType{dtype.F32, dtype.BF16}[rng.IntN(2)]
		j := job{algo: append([]Algo{Auto}, Algos...)[rng.IntN(len(Algos)+1)], count: count,
			ins: g.alloc(t, dt, count), outs: g.alloc(t, dt, count)}
		j.vals = fill(rng, j.ins, count)
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
		t.Run(fmt.Sprintf("call%d", i), func(t *testing.T) { checkAllReduce(t, j.vals, j.outs, j.count) })
	}
}

func TestAllGather(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		for _, count := range []int{1, 9, 5000} {
			t.Run(fmt.Sprintf("n=%d/count=%d", n, count), func(t *testing.T) {
				g := newGroup(t, n, device.NVSwitch, Config{BufferBytes: 4096})
				ins, outs := g.alloc(t, dtype.BF16, count), g.alloc(t, dtype.BF16, n*count)
				vals := fill(rand.New(rand.NewPCG(3, 4)), ins, count)
				for r := range n {
					require.NoError(t, g.c.Rank(r).AllGather(g.streams[r], ins[r], outs[r], count))
				}
				for _, err := range g.syncAll() {
					require.NoError(t, err)
				}
				for r := range n {
					for p := range n {
						for i := range count {
							require.Equal(t, vals[p][i], element(outs[r], p*count+i), "rank %d, from rank %d, element %d", r, p, i)
						}
					}
				}
			})
		}
	}
}
