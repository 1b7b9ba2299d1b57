package fused

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestSeqParallelMatchesPair: the fused sequence-parallel variant gives, on every rank,
// bitwise the unfused pair's results — comm's direct reduce-scatter, a residual + RMSNorm
// kernel, two all-gathers — at token counts around every world size (1, n-1, n, n+1, odd
// ones, fewer tokens than ranks). Where n does not divide the tokens, the pair runs on
// the rows padded with zero rows to a multiple of n (Megatron's way), and its first rows
// must be the variant's, which pads nothing. Both also equal the one-shot pair.
func TestSeqParallelMatchesPair(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6, 8} {
		g := newRig(t, n, comm.Config{Algo: comm.OneShot})
		for _, tokens := range seqParallelTokens(n) {
			for _, hidden := range []int{64, 200} {
				t.Run(fmt.Sprintf("n=%d/tokens=%d/hidden=%d", n, tokens, hidden), func(t *testing.T) {
					sh := Shape{Tokens: tokens, Hidden: hidden, Eps: 1e-5}
					g.load(t, sh)
					count := tokens * hidden
					residual0 := append([]float32(nil), g.residual[0].Float32s()[:count]...)

					padded := Shape{Tokens: (tokens + n - 1) / n * n, Hidden: hidden, Eps: sh.Eps}
					pad := g.padded(t, padded.Tokens*hidden, count)
					for r := range n {
						require.NoError(t, seqParallelPair(g.c.Rank(r), g.streams[r], pad.partial[r], pad.residual[r], g.weight[r], pad.out[r], padded))
					}
					g.sync(t)

					g.run(t, SeqParallel, sh)
					for r := range n {
						require.Equal(t, pad.out[r].Float32s()[:count], g.out[r].Float32s()[:count], "rank %d out", r)
						require.Equal(t, pad.residual[r].Float32s()[:count], g.residual[r].Float32s()[:count], "rank %d residual", r)
					}
					out := append([]float32(nil), g.out[0].Float32s()[:count]...)
					res := append([]float32(nil), g.residual[0].Float32s()[:count]...)

					for r := range n {
						copy(g.residual[r].Float32s(), residual0)
					}
					g.run(t, Unfused, sh) // over the one-shot all-reduce
					require.Equal(t, g.out[0].Float32s()[:count], out, "one-shot pair's out")
					require.Equal(t, g.residual[0].Float32s()[:count], res, "one-shot pair's residual")
				})
			}
		}
	}
}

// seqParallelTokens are the token counts tested at world size n.
func seqParallelTokens(n int) []int {
	tokens := []int{1, 7, 33}
	for _, k := range []int{n - 1, n, n + 1, 2*n + 1, 4 * n} {
		if k >= 1 {
			tokens = append(tokens, k)
		}
	}
	return tokens
}

// padded copies the rig's partials and residual into buffers of total elements, zero past
// count, with an output buffer to match.
func (g *rig) padded(t testing.TB, total, count int) *rig {
	t.Helper()
	p := &rig{c: g.c, streams: g.streams, weight: g.weight}
	alloc := func(from []*device.Buffer) []*device.Buffer {
		bufs := make([]*device.Buffer, len(g.partial))
		for r := range bufs {
			b, err := g.c.Rank(r).Device().Alloc(dtype.F32, total)
			require.NoError(t, err)
			if from != nil {
				copy(b.Float32s(), from[r].Float32s()[:count])
			}
			bufs[r] = b
		}
		return bufs
	}
	p.partial, p.residual, p.out = alloc(g.partial), alloc(g.residual), alloc(nil)
	return p
}

func (g *rig) sync(t testing.TB) {
	t.Helper()
	for r, s := range g.streams {
		require.NoError(t, s.Synchronize(), "rank %d", r)
	}
}

// TestSeqParallelPairNeedsEvenSplit: the unfused pair refuses tokens n does not divide,
// saying so, and the fused variant refuses rows too long for half the buffer.
func TestSeqParallelPairNeedsEvenSplit(t *testing.T) {
	g := newRig(t, 4, comm.Config{BufferBytes: 4096})
	sh := Shape{Tokens: 6, Hidden: 8, Eps: 1e-5}
	g.load(t, sh)
	err := seqParallelPair(g.c.Rank(1), g.streams[1], g.partial[1], g.residual[1], g.weight[1], g.out[1], sh)
	require.ErrorContains(t, err, "fused: rank 1 reduce-scatter + rmsnorm + all-gather of 6×8: 6 tokens do not split evenly over 4 ranks")
	long := Shape{Tokens: 1, Hidden: 600, Eps: 1e-5}
	g.load(t, long)
	err = AllReduceAddRMSNorm(g.c.Rank(0), g.streams[0], SeqParallel, g.partial[0], g.residual[0], g.weight[0], g.out[0], long)
	require.ErrorContains(t, err, "a row of 600 f32 does not fit half the 1024-element registered buffer")
}

// TestSeqParallelFailures: a rank that never calls makes its peers fail by the deadline,
// naming it and the call; a rank that runs another variant under the same sequence number
// is named in a mismatch error, at once.
func TestSeqParallelFailures(t *testing.T) {
	sh := Shape{Tokens: 8, Hidden: 16, Eps: 1e-5}
	g := newRig(t, 4, comm.Config{Timeout: 300 * time.Millisecond})
	g.load(t, sh)
	for r := range 3 {
		require.NoError(t, AllReduceAddRMSNorm(g.c.Rank(r), g.streams[r], SeqParallel, g.partial[r], g.residual[r], g.weight[r], g.out[r], sh))
	}
	var errs []error
	for _, s := range g.streams {
		errs = append(errs, s.Synchronize())
	}
	require.NoError(t, errs[3])
	for r := range 3 {
		require.ErrorContains(t, errs[r], fmt.Sprintf("comm: rank %d seq 0 reducescatter+rmsnorm+allgather f32 count 128 (oneshot)", r))
		require.ErrorContains(t, errs[r], "rank(s) [3] did not arrive within 300ms")
	}

	g = newRig(t, 4, comm.Config{Timeout: 20 * time.Second})
	g.load(t, sh)
	start := time.Now()
	for r := range 4 {
		v := SeqParallel
		if r == 2 {
			v = TwoShot
		}
		_ = AllReduceAddRMSNorm(g.c.Rank(r), g.streams[r], v, g.partial[r], g.residual[r], g.weight[r], g.out[r], sh)
	}
	errs = errs[:0]
	for _, s := range g.streams {
		errs = append(errs, s.Synchronize())
	}
	require.Less(t, time.Since(start), 10*time.Second, "a mismatch must not wait for the deadline")
	all := errors.Join(errs...)
	require.ErrorContains(t, all, "collective mismatch at seq 0")
	require.ErrorContains(t, all, "allreduce+rmsnorm f32 count 128 (twoshot)")
	require.ErrorContains(t, all, "reducescatter+rmsnorm+allgather f32 count 128 (oneshot)")
}
