package engine

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/layers"
)

func TestPickGreedyTieBreak(t *testing.T) {
	cands := []layers.Candidate{{Logit: 1, ID: 9}, {Logit: 3, ID: 7}, {Logit: 3, ID: 4}, {Logit: -2, ID: 1}}
	require.Equal(t, int32(4), Pick(cands, Sampling{}, 0, 0), "ties go to the lower id")
	require.Equal(t, int32(4), Pick([]layers.Candidate{{Logit: 3, ID: 7}, {Logit: 3, ID: 4}}, Sampling{Temperature: 1, TopK: 1}, 5, 0))
}

func TestPickSamplingDistribution(t *testing.T) {
	// Two tokens with logits ln 3 and 0 at temperature 1: probabilities 3/4 and 1/4.
	const n = 20000
	counts := map[int32]int{}
	for step := range uint64(n) {
		cands := []layers.Candidate{{Logit: 0, ID: 2}, {Logit: 1.0986123, ID: 1}, {Logit: -50, ID: 3}}
		counts[Pick(cands, Sampling{Temperature: 1, Seed: 42}, step, 0)]++
	}
	require.InDelta(t, 0.75, float64(counts[1])/n, 0.02)
	require.InDelta(t, 0.25, float64(counts[2])/n, 0.02)

	// top_p 0.7 keeps only the first token; top_k 1 likewise; the same seed and step repeat.
	for step := range uint64(100) {
		require.Equal(t, int32(1), Pick([]layers.Candidate{{Logit: 0, ID: 2}, {Logit: 1.0986123, ID: 1}}, Sampling{Temperature: 1, TopP: 0.7, Seed: 1}, step, math.Log(4)))
	}
	a := Pick([]layers.Candidate{{Logit: 0, ID: 2}, {Logit: 0.5, ID: 1}, {Logit: 0.2, ID: 5}}, Sampling{Temperature: 0.8, Seed: 9}, 3, 0)
	b := Pick([]layers.Candidate{{Logit: 0.2, ID: 5}, {Logit: 0, ID: 2}, {Logit: 0.5, ID: 1}}, Sampling{Temperature: 0.8, Seed: 9}, 3, 0)
	require.Equal(t, a, b, "the order candidates arrive in does not matter")
}

func TestSamplingValidate(t *testing.T) {
	require.NoError(t, Sampling{Temperature: 0.7, TopK: 40, TopP: 0.9}.Validate())
	require.ErrorContains(t, Sampling{Temperature: -1}.Validate(), "temperature must be ≥ 0")
	require.ErrorContains(t, Sampling{TopK: -3}.Validate(), "top_k must be ≥ 0, got -3")
	require.ErrorContains(t, Sampling{TopP: 1.5}.Validate(), "top_p must be in [0, 1], got 1.5")
}
