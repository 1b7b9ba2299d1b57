package fused

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// rig is n ranks with a stream each and, per rank, the buffers of one fused call.
type rig struct {
	c                              *comm.Communicator
	streams                        []*device.Stream
	partial, residual, weight, out []*device.Buffer
}

func newRig(t testing.TB, n int, cfg comm.Config) *rig {
	t.Helper()
	node, err := device.NewNode(device.NodeConfig{Devices: n, SMs: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = node.Close() })
	c, err := comm.New(node, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	g := &rig{c: c}
	for r := range n {
		s, err := c.Rank(r).Device().NewStream("comm", 0)
		require.NoError(t, err)
		g.streams = append(g.streams, s)
	}
	return g
}

// load allocates the call's buffers and fills them: partials differ per rank; residual and
// weight are the same on every rank, as in a TP model.
func (g *rig) load(t testing.TB, sh Shape) {
	t.Helper()
	n, count := g.c.Size(), sh.Tokens*sh.Hidden
	alloc := func(k int) []*device.Buffer {
		bufs := make([]*device.Buffer, n)
		for r := range bufs {
			b, err := g.c.Rank(r).Device().Alloc(dtype.F32, max(k, 1))
			require.NoError(t, err)
			bufs[r] = b
		}
		return bufs
	}
	g.partial, g.residual, g.weight, g.out = alloc(count), alloc(count), alloc(sh.Hidden), alloc(count)
	comm.Fill(g.partial, count, 1)
	comm.Fill(g.residual[:1], count, 2)
	comm.Fill(g.weight[:1], sh.Hidden, 3)
	for r := 1; r < n; r++ {
		copy(g.residual[r].Float32s(), g.residual[0].Float32s())
		copy(g.weight[r].Float32s(), g.weight[0].Float32s())
	}
}

func (g *rig) run(t testing.TB, v Variant, sh Shape) {
	t.Helper()
	for r := range g.c.Size() {
		require.NoError(t, AllReduceAddRMSNorm(g.c.Rank(r), g.streams[r], v, g.partial[r], g.residual[r], g.weight[r], g.out[r], sh))
	}
	for r, s := range g.streams {
		require.NoError(t, s.Synchronize(), "rank %d", r)
	}
}

// reference computes residual' and out in float64 from rank 0's original residual.
func (g *rig) reference(sh Shape, residual0 []float32) (res, out []float64) {
	h := sh.Hidden
	res, out = make([]float64, sh.Tokens*h), make([]float64, sh.Tokens*h)
	w := g.weight[0].Float32s()
	for t := range sh.Tokens {
		ss := 0.0
		for i := range h {
			x := float64(residual0[t*h+i])
			for _, p := range g.partial {
				x += float64(p.Float32s()[t*h+i])
			}
			res[t*h+i] = x
			ss += x * x
		}
		scale := 1 / math.Sqrt(ss/float64(h)+float64(sh.Eps))
		for i := range h {
			out[t*h+i] = res[t*h+i] * scale * float64(w[i])
		}
	}
	return res, out
}

// references pairs the fused variants with the all-reduce of the unfused pair whose bits
// they must give: one-shot, two-shot, NVLS and the sequence-parallel variant sum in rank
// order, the tree in its own.
var references = []struct {
	algo     comm.Algo
	variants []Variant
}{
	{comm.OneShot, []Variant{OneShot, TwoShot, NVLS, SeqParallel}},
	{comm.Tree, []Variant{Tree}},
}

// TestFusedMatchesUnfused: every variant, for every world size, token count and hidden
// size, gives bitwise the unfused pair's result (its reference all-reduce, then residual +
// RMSNorm), the same bits on every rank, and the float64 reference within f32 tolerance.
func TestFusedMatchesUnfused(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6, 8} {
		for _, ref := range references {
			testFusedMatchesUnfused(t, n, ref.algo, ref.variants)
		}
	}
}

func testFusedMatchesUnfused(t *testing.T, n int, algo comm.Algo, variants []Variant) {
	g := newRig(t, n, comm.Config{Algo: algo}) // the unfused pair's all-reduce
	for _, tokens := range []int{1, 3, 8, 33} {
		for _, hidden := range []int{64, 4096} {
			sh := Shape{Tokens: tokens, Hidden: hidden, Eps: 1e-5}
			g.load(t, sh)
			count := tokens * hidden
			residual0 := append([]float32(nil), g.residual[0].Float32s()[:count]...)
			wantRes, wantOut := g.reference(sh, residual0)

			g.run(t, Unfused, sh)
			refRes := append([]float32(nil), g.residual[0].Float32s()[:count]...)
			refOut := append([]float32(nil), g.out[0].Float32s()[:count]...)
			for i := range count {
				require.InDelta(t, wantRes[i], float64(refRes[i]), 1e-5*(1+math.Abs(wantRes[i])), "residual %d", i)
				require.InDelta(t, wantOut[i], float64(refOut[i]), 1e-4*(1+math.Abs(wantOut[i])), "out %d", i)
			}
			for _, v := range variants {
				t.Run(fmt.Sprintf("n=%d/tokens=%d/hidden=%d/%v", n, tokens, hidden, v), func(t *testing.T) {
					for r := range n {
						copy(g.residual[r].Float32s(), residual0)
					}
					g.run(t, v, sh)
					for r := range n {
						require.Equal(t, refRes, g.residual[r].Float32s()[:count], "rank %d residual", r)
						require.Equal(t, refOut, g.out[r].Float32s()[:count], "rank %d out", r)
					}
				})
			}
		}
	}
}

// TestFusedChunks drives rows through registered buffers far smaller than the message,
// back to back with every variant and in place (out = partial), so chunk and block
// boundaries and buffer reuse across calls are exercised.
func TestFusedChunks(t *testing.T) {
	for _, ref := range references {
		t.Run(ref.algo.String(), func(t *testing.T) { testFusedChunks(t, ref.algo, ref.variants) })
	}
}

func testFusedChunks(t *testing.T, algo comm.Algo, variants []Variant) {
	const n = 4
	sh := Shape{Tokens: 37, Hidden: 96, Eps: 1e-6}
	g := newRig(t, n, comm.Config{BufferBytes: 4096, Algo: algo, Blocks: 2})
	g.load(t, sh)
	count := sh.Tokens * sh.Hidden
	residual0 := append([]float32(nil), g.residual[0].Float32s()[:count]...)
	partials := make([][]float32, n)
	for r := range n {
		partials[r] = append([]float32(nil), g.partial[r].Float32s()[:count]...)
	}
	g.run(t, Unfused, sh)
	want := append([]float32(nil), g.out[0].Float32s()[:count]...)
	for round := range 20 {
		for _, v := range variants {
			for r := range n {
				copy(g.residual[r].Float32s(), residual0)
				copy(g.partial[r].Float32s(), partials[r])
				require.NoError(t, AllReduceAddRMSNorm(g.c.Rank(r), g.streams[r], v, g.partial[r], g.residual[r], g.weight[r], g.partial[r], sh))
			}
			for _, s := range g.streams {
				require.NoError(t, s.Synchronize())
			}
			for r := range n {
				require.Equal(t, want, g.partial[r].Float32s()[:count], "round %d %v rank %d", round, v, r)
			}
		}
	}
}

func TestFusedBadArguments(t *testing.T) {
	g := newRig(t, 2, comm.Config{})
	sh := Shape{Tokens: 2, Hidden: 8, Eps: 1e-5}
	g.load(t, sh)
	r0, s0 := g.c.Rank(0), g.streams[0]
	bf, err := r0.Device().Alloc(dtype.BF16, 16)
	require.NoError(t, err)
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"eps", AllReduceAddRMSNorm(r0, s0, Auto, g.partial[0], g.residual[0], g.weight[0], g.out[0], Shape{Tokens: 2, Hidden: 8}), "eps must be positive"},
		{"short weight", AllReduceAddRMSNorm(r0, s0, Auto, g.partial[0], g.residual[0], g.weight[0], g.out[0], Shape{Tokens: 1, Hidden: 16, Eps: 1e-5}), "weight holds 8 elements, needs 16"},
		{"bf16", AllReduceAddRMSNorm(r0, s0, Auto, bf, g.residual[0], g.weight[0], g.out[0], sh), "partial is bf16"},
		{"peer device", AllReduceAddRMSNorm(r0, s0, Auto, g.partial[1], g.residual[0], g.weight[0], g.out[0], sh), "partial device 1 buffer"},
		{"row too long", AllReduceAddRMSNorm(r0, s0, Auto, g.partial[0], g.residual[0], g.weight[0], g.out[0], Shape{Tokens: 1, Hidden: 4 << 20, Eps: 1}), "does not fit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.err, "fused: rank 0 allreduce+rmsnorm")
			require.ErrorContains(t, tc.err, tc.want)
		})
	}
	_, err = ParseVariant("magic")
	require.ErrorContains(t, err, `unknown fused all-reduce variant "magic"`)
}

// TestSelectFollowsAlgo: Auto runs the fused form of the all-reduce comm picks.
func TestSelectFollowsAlgo(t *testing.T) {
	for _, v := range []Variant{OneShot, TwoShot, Tree} {
		require.Equal(t, v, Select(newRig(t, 2, comm.Config{Algo: v.algo()}).c, nil, 1, 256))
		back, err := ParseVariant(v.String())
		require.NoError(t, err)
		require.Equal(t, v, back)
	}
	require.Equal(t, Unfused, Select(newRig(t, 2, comm.Config{Algo: comm.Ring}).c, nil, 1, 256))
}

// TestVariantsFollowRegistry: an all-reduce algorithm has a fused variant, of its name,
// exactly where comm's registry says it has a fused form, and the variant follows it back.
func TestVariantsFollowRegistry(t *testing.T) {
	for _, a := range append(slices.Clone(comm.Algos), comm.HostAlgos...) {
		v := variantOf(a)
		if !a.Fused() {
			require.Equal(t, Unfused, v, "%v has no fused form", a)
			continue
		}
		require.Equal(t, a.String(), v.String(), "%v's fused form", a)
		require.Equal(t, a, v.algo(), "the algorithm %v follows", v)
	}
	require.Equal(t, comm.OneShot, SeqParallel.algo())
	require.Equal(t, comm.Auto, Unfused.algo())
	require.Equal(t, comm.Auto, Auto.algo())
	require.Equal(t, Unfused, variantOf(comm.Auto))
}
