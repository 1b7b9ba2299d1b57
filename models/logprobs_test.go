package models

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
)

// refLogSumExp is log Σ exp(logit) over the full logits, in f64 (gonum's, the reference).
func refLogSumExp(logits []float32) float64 {
	wide := make([]float64, len(logits))
	for i, l := range logits {
		wide[i] = float64(l)
	}
	return floats.LogSumExp(wide)
}

// TestLlamaLogSumExp: the log-softmax normalizer combined from every rank's two shard terms
// equals a f64 reference over the full logits to 1e-7, at TP 1 and 8 (vocabularies that
// split evenly and not), with the full logits and with candidates, and asking for it
// changes neither the logits nor the candidates.
func TestLlamaLogSumExp(t *testing.T) {
	for _, preset := range []string{"tiny", "tiny-odd"} {
		cfg := tpPreset(t, preset)
		src, err := NewDummy(cfg, tpTestSeed)
		require.NoError(t, err)
		for _, world := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s/tp=%d", preset, world), func(t *testing.T) {
				m := newTestLlama(t, world, cfg, src, tpTestOptions)
				ids := tpPromptIDs(7, cfg.Vocab)
				st := oneSequence(m, ids, 0, 0)
				require.NoError(t, m.Forward(st))
				logits := m.Logits(st)[0]
				st.Logprobs = true
				require.NoError(t, m.Forward(st))
				require.Equal(t, logits, m.Logits(st)[0])
				lse := m.LogSumExp(st)
				require.Len(t, lse, 1)
				want := refLogSumExp(logits)
				require.InDelta(t, want, lse[0], 1e-7) // each rank's sum travels as a f32: 2⁻²⁴ relative
				t.Logf("log-sum-exp %.12g, |Δ| vs f64 reference %.3g", lse[0], math.Abs(want-lse[0]))

				last := oneSequence(m, ids[len(ids)-1:], len(ids)-1, 5)
				require.NoError(t, m.Forward(last))
				cands := m.Candidates(last)
				last.Logprobs = true
				require.NoError(t, m.Forward(last))
				require.Equal(t, cands, m.Candidates(last))
				require.Equal(t, lse, m.LogSumExp(last), "the same shard terms with candidates")
			})
		}
	}
}
