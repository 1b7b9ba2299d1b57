package comm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// scatterAlgos are the algorithms of reduce-scatter and all-gather.
var scatterAlgos = []Algo{OneShot, Ring}

// orderedSum is the reduce-scatter's documented sum of element i of slice q, computed on
// the host from the ranks' inputs: f32 adds in the given rank order, one rounding to the
// dtype at the end.
func orderedSum(ins []*device.Buffer, order []int, q, count, i int) uint32 {
	at := q*count + i
	acc := float32(elementF64(ins[order[0]], at))
	for _, p := range order[1:] {
		acc += float32(elementF64(ins[p], at))
	}
	return roundBits(ins[0].DType(), acc)
}

func roundBits(t dtype.DType, x float32) uint32 {
	if t == dtype.F32 {
		return math.Float32bits(x)
	}
	return uint32(dtype.FromF32(t, x))
}

// sumOrder is the rank order in which algo sums slice q over n ranks.
func sumOrder(algo Algo, n, q int) []int {
	order := make([]int, n)
	for k := range n {
		order[k] = k // direct: rank order
		if algo == Ring {
			order[k] = (q + 1 + k) % n // from q+1 around to q
		}
	}
	return order
}

// checkReduceScatter requires every rank's outputs to be, bit for bit, the documented sum
// of its slice, and within the dtype's tolerance of the float64 sum.
func checkReduceScatter(t testing.TB, algo Algo, ins, outs []*device.Buffer, count int) {
	t.Helper()
	n := len(ins)
	require.Zero(t, CountWrongReduceScatter(ins, outs, count), "against the float64 reference")
	for r, out := range outs {
		order := sumOrder(algo, n, r)
		for i := range count {
			if want, got := orderedSum(ins, order, r, count, i), element(out, i); want != got {
				require.Failf(t, "reduce-scatter", "%v rank %d element %d: bits %#x, want %#x (sum in rank order %v)", algo, r, i, got, want, order)
			}
		}
	}
}

// TestReduceScatterMatchesReference: both algorithms for every world size, odd counts and
// counts beyond a chunk, f32 and bf16, bitwise the documented order of summation.
func TestReduceScatterMatchesReference(t *testing.T) {
	counts := []int{1, 7, 4096 + 3, 1<<18 + 5}
	if testing.Short() || raceDetector {
		counts = counts[:3]
	}
	for _, n := range []int{1, 2, 3, 4, 6, 8} {
		g := newGroup(t, n, device.NVSwitch, Config{})
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			for _, count := range counts {
				ins, outs := g.alloc(t, dt, n*count), g.alloc(t, dt, count)
				for _, algo := range scatterAlgos {
					t.Run(fmt.Sprintf("n=%d/%v/count=%d/%v", n, dt, count, algo), func(t *testing.T) {
						Fill(ins, n*count, uint64(n+count))
						for r := range n {
							require.NoError(t, g.c.Rank(r).ReduceScatterWith(g.streams[r], algo, ins[r], outs[r], count))
						}
						for r, err := range g.syncAll() {
							require.NoError(t, err, "rank %d", r)
						}
						checkReduceScatter(t, algo, ins, outs, count)
					})
				}
			}
		}
	}
}

// TestReduceScatterThenAllGather: the two halves make an all-reduce. The direct pair gives
// the one-shot all-reduce's bits on every rank (both sum in rank order), through chunks
// far smaller than the message, in place (rank r's output is slice r of its input, as
// NCCL allows), and every rank holds the same bits.
func TestReduceScatterThenAllGather(t *testing.T) {
	const n, count = 4, 5000 + 1
	g := newGroup(t, n, device.NVSwitch, Config{BufferBytes: 4096})
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, rs := range scatterAlgos {
			for _, ag := range scatterAlgos {
				t.Run(fmt.Sprintf("%v/%v+%v", dt, rs, ag), func(t *testing.T) {
					bufs, orig, gathered, want := g.alloc(t, dt, n*count), g.alloc(t, dt, n*count), g.alloc(t, dt, n*count), g.alloc(t, dt, n*count)
					Fill(orig, n*count, 11)
					for r := range n {
						copy(bufs[r].Uint16s(), orig[r].Uint16s())
						require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], OneShot, orig[r], want[r], n*count))
						slice, err := bufs[r].View(r*count, count)
						require.NoError(t, err)
						require.NoError(t, g.c.Rank(r).ReduceScatterWith(g.streams[r], rs, bufs[r], slice, count))
						require.NoError(t, g.c.Rank(r).AllGatherWith(g.streams[r], ag, slice, gathered[r], count))
					}
					for _, err := range g.syncAll() {
						require.NoError(t, err)
					}
					checkAllReduce(t, orig, gathered, n*count)
					if rs == OneShot {
						for r := range n {
							require.Equal(t, want[r].Uint16s(), gathered[r].Uint16s(), "rank %d: direct reduce-scatter + all-gather against the one-shot all-reduce", r)
						}
					}
				})
			}
		}
	}
}

// TestScatterGatherAlgo: Auto follows the fabric (direct, the ring on PCIe beyond two
// GPUs) and the records say which ran; a forced algorithm runs anywhere; an all-reduce
// algorithm that has no reduce-scatter form is refused, naming it.
func TestScatterGatherAlgo(t *testing.T) {
	for _, c := range []struct {
		fabric device.Fabric
		n      int
		want   Algo
	}{{device.NVSwitch, 8, OneShot}, {device.PCIe, 2, OneShot}, {device.PCIe, 4, Ring}} {
		g := newGroup(t, c.n, c.fabric, Config{})
		require.Equal(t, c.want, g.c.ReduceScatterAlgo(), "%v n=%d", c.fabric, c.n)
		ins, outs := g.alloc(t, dtype.F32, c.n*3), g.alloc(t, dtype.F32, 3)
		for _, algo := range []Algo{Auto, OneShot, Ring} {
			for r := range c.n {
				require.NoError(t, g.c.Rank(r).ReduceScatterWith(g.streams[r], algo, ins[r], outs[r], 3))
			}
			for _, err := range g.syncAll() {
				require.NoError(t, err)
			}
			last, ok := g.c.Recorder(0).Last()
			require.True(t, ok)
			want := algo
			if algo == Auto {
				want = c.want
			}
			require.Equal(t, "reducescatter", last.Op)
			require.Equal(t, want, last.Algo, "%v n=%d asked for %v", c.fabric, c.n, algo)
		}
		err := g.c.Rank(0).ReduceScatterWith(g.streams[0], TwoShot, ins[0], outs[0], 3)
		require.ErrorContains(t, err, "comm: rank 0 reducescatter: algorithm twoshot does not exist for it")
		err = g.c.Rank(0).AllGatherWith(g.streams[0], Tree, outs[0], ins[0], 3)
		require.ErrorContains(t, err, "comm: rank 0 allgather: algorithm tree does not exist for it")
	}
}

// TestScatterGatherBackToBack issues 1000 reduce-scatters and all-gathers of mixed sizes,
// dtypes and algorithms without waiting in between, so fast ranks run ahead into later
// barriers and reuse the staging buffers while slow ones still read them.
func TestScatterGatherBackToBack(t *testing.T) {
	const n, calls = 4, 1000
	g := newGroup(t, n, device.NVSwitch, Config{BufferBytes: 16 << 10})
	rng := rand.New(rand.NewPCG(9, 9))
	type job struct {
		scatter bool
		algo    Algo
		count   int
		ins     []*device.Buffer
		outs    []*device.Buffer
	}
	jobs := make([]job, calls)
	for i := range jobs {
		count := []int{1, 5, 100, 3000}[rng.IntN(4)]
		dt := []dtype.DType{dtype.F32, dtype.BF16}[rng.IntN(2)]
		j := job{scatter: rng.IntN(2) == 0, algo: []Algo{Auto, OneShot, Ring}[rng.IntN(3)], count: count}
		if j.scatter {
			j.ins, j.outs = g.alloc(t, dt, n*count), g.alloc(t, dt, count)
			Fill(j.ins, n*count, uint64(i))
		} else {
			j.ins, j.outs = g.alloc(t, dt, count), g.alloc(t, dt, n*count)
			Fill(j.ins, count, uint64(i))
		}
		jobs[i] = j
	}
	for _, j := range jobs {
		for r := range n {
			issue := g.c.Rank(r).AllGatherWith
			if j.scatter {
				issue = g.c.Rank(r).ReduceScatterWith
			}
			require.NoError(t, issue(g.streams[r], j.algo, j.ins[r], j.outs[r], j.count))
		}
	}
	for _, err := range g.syncAll() {
		require.NoError(t, err)
	}
	for i, j := range jobs {
		if j.scatter {
			algo := j.algo
			if algo == Auto {
				algo = OneShot
			}
			checkReduceScatter(t, algo, j.ins, j.outs, j.count)
		} else {
			require.Zero(t, CountWrongAllGather(j.ins, j.outs, j.count), "call %d", i)
		}
	}
}

// TestScatterGatherMissingRank: rank 2 never issues its call; the others fail by the
// deadline, naming rank 2, for both collectives and both algorithms.
func TestScatterGatherMissingRank(t *testing.T) {
	for _, op := range []string{"reducescatter", "allgather"} {
		for _, algo := range scatterAlgos {
			t.Run(op+"/"+algo.String(), func(t *testing.T) {
				const n, count = 3, 100
				g := newGroup(t, n, device.NVSwitch, Config{Timeout: 300 * time.Millisecond})
				bufs := g.alloc(t, dtype.F32, n*count)
				for r := range n - 1 {
					issue := g.c.Rank(r).AllGatherWith
					if op == "reducescatter" {
						issue = g.c.Rank(r).ReduceScatterWith
					}
					out, err := bufs[r].View(0, count)
					in := bufs[r]
					if op == "allgather" {
						in, out = out, bufs[r]
					}
					require.NoError(t, err)
					require.NoError(t, issue(g.streams[r], algo, in, out, count))
				}
				start := time.Now()
				errs := g.syncAll()
				require.Less(t, time.Since(start), 10*time.Second)
				for r := range n - 1 {
					require.ErrorContains(t, errs[r], fmt.Sprintf("comm: rank %d seq 0 %s f32 count %d (%v)", r, op, count, algo))
					require.ErrorContains(t, errs[r], "did not arrive")
				}
				require.ErrorContains(t, errors.Join(errs...), "rank(s) [2] did not arrive within 300ms")
			})
		}
	}
}

func TestReduceScatterBadArguments(t *testing.T) {
	g := newGroup(t, 2, device.NVLinkMesh, Config{})
	in, out := g.alloc(t, dtype.F32, 8), g.alloc(t, dtype.F32, 8)
	err := g.c.Rank(0).ReduceScatter(g.streams[0], in[0], out[0], 5)
	require.ErrorContains(t, err, "comm: rank 0 reducescatter of 5 elements: input holds 8 elements, needs n·count = 10")
	err = g.c.Rank(1).ReduceScatter(g.streams[1], in[1], out[1], 9)
	require.ErrorContains(t, err, "comm: rank 1 reducescatter of 9 elements: input holds only 8 elements")
}
