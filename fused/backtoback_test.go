package fused

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
)

// TestVariantsBackToBack: 1000 fused calls queued without a host sync in between, cycling
// the variants that sum in rank order (one-shot, two-shot, sequence-parallel) and the token
// counts around the world size, each call reading the residual the one before wrote. The
// same sequence through the unfused pair over the one-shot all-reduce, on a second node,
// must end in the same bits on every rank: buffers and flags reused call after call, and
// a variant's switch from one shape to the next, change nothing.
func TestVariantsBackToBack(t *testing.T) {
	const n, hidden, calls = 4, 64, 1000
	tokens := []int{1, n - 1, n, n + 1, 2*n + 1}
	variants := []Variant{OneShot, TwoShot, SeqParallel}
	maxTokens := tokens[len(tokens)-1]
	fusedRig, pairRig := newRig(t, n, comm.Config{}), newRig(t, n, comm.Config{Algo: comm.OneShot})
	full := Shape{Tokens: maxTokens, Hidden: hidden, Eps: 1e-5}
	fusedRig.load(t, full)
	pairRig.load(t, full)
	queue := func(g *rig, i int, v Variant) {
		sh := Shape{Tokens: tokens[i%len(tokens)], Hidden: hidden, Eps: full.Eps}
		for r := range n {
			require.NoError(t, AllReduceAddRMSNorm(g.c.Rank(r), g.streams[r], v, g.partial[r], g.residual[r], g.weight[r], g.out[r], sh), "call %d rank %d", i, r)
		}
	}
	for i := range calls {
		queue(fusedRig, i, variants[i%len(variants)])
		queue(pairRig, i, Unfused)
	}
	fusedRig.sync(t)
	pairRig.sync(t)
	count := maxTokens * hidden
	for r := range n {
		require.Equal(t, pairRig.residual[r].Float32s()[:count], fusedRig.residual[r].Float32s()[:count], "rank %d residual", r)
		require.Equal(t, pairRig.out[r].Float32s()[:count], fusedRig.out[r].Float32s()[:count], "rank %d out", r)
	}
}
