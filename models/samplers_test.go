package models

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/layers"
)

// TestLlamaSamplers: with a sampler, every rank adjusts its shard and proposes its
// Gumbel-max winner first, so the best of the gathered winners is the draw over the full
// adjusted logits, at TP 1 and 8 (a vocabulary that splits evenly and one that does not);
// the terms sum the adjusted logits at the temperature and LogSumExp stays the raw
// logits'.
func TestLlamaSamplers(t *testing.T) {
	for _, preset := range []string{"tiny", "tiny-odd"} {
		cfg := tpPreset(t, preset)
		src, err := NewDummy(cfg, tpTestSeed)
		require.NoError(t, err)
		for _, world := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s/tp=%d", preset, world), func(t *testing.T) {
				m := newTestLlama(t, world, cfg, src, tpTestOptions)
				st := oneSequence(m, tpPromptIDs(7, cfg.Vocab), 0, 0)
				st.Logprobs = true
				require.NoError(t, m.Forward(st))
				raw, lse := m.Logits(st)[0], m.LogSumExp(st)[0]

				last := int32(cfg.Vocab - 1)
				sp := layers.RowSampler{Temperature: 0.9, Draw: true, Terms: true, Seed: 11, Pos: 3,
					Adjust: []layers.LogitAdjust{{ID: last, Bias: 3}, {ID: 0, Mask: true}}}
				adjusted := slices.Clone(raw)
				sp.Apply(adjusted, 0)
				want, err := sp.Winner(adjusted, 0)
				require.NoError(t, err)

				st.Candidates, st.Samplers = 3, []layers.RowSampler{sp}
				require.NoError(t, m.Forward(st))
				cands := m.Candidates(st)[0]
				require.Len(t, cands, 3*world)
				best, score := cands[0], math.Inf(-1)
				for _, c := range cands {
					if s := layers.Score(c.Logit, sp.Temperature, sp.Seed, sp.Pos, c.ID); s > score {
						best, score = c, s
					}
				}
				require.Equal(t, want, best)
				require.InDelta(t, lse, m.LogSumExp(st)[0], 1e-12, "logprobs stay the raw logits'")
				m0, sum := layers.ShardLogSumExpAt(adjusted, sp.Temperature)
				terms := m.SamplerTerms(st)[0]
				require.Len(t, terms, 2*world)
				total := 0.0
				for r := 0; r < len(terms); r += 2 {
					total += float64(terms[r+1]) * math.Exp((float64(terms[r])-float64(m0))/float64(sp.Temperature))
				}
				require.InDelta(t, sum, total, 1e-5*sum)
			})
		}
	}
}

// TestLlamaSamplersRefused: samplers that do not fit the step are refused with what was
// wrong, before any kernel runs.
func TestLlamaSamplersRefused(t *testing.T) {
	cfg := tpPreset(t, "tiny")
	src, err := NewDummy(cfg, tpTestSeed)
	require.NoError(t, err)
	m := newTestLlama(t, 2, cfg, src, tpTestOptions)
	for _, tc := range []struct {
		k        int
		samplers []layers.RowSampler
		want     string
	}{
		{1, []layers.RowSampler{{}, {}}, "2 samplers for 1 sampled tokens"},
		{0, []layers.RowSampler{{}}, "want one per sampled token, with candidates"},
		{1, []layers.RowSampler{{Draw: true}}, "sampler 0 draws or sums at temperature 0"},
		{1, []layers.RowSampler{{Adjust: []layers.LogitAdjust{{ID: int32(cfg.Vocab)}}}}, fmt.Sprintf("adjusts token %d, outside the vocabulary", cfg.Vocab)},
	} {
		st := oneSequence(m, tpPromptIDs(3, cfg.Vocab), 0, tc.k)
		st.Samplers = tc.samplers
		require.ErrorContains(t, m.Forward(st), tc.want)
	}
}
