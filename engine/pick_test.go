package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/layers"
)

// pickReference is Pick's plain reference: a sort of every candidate, then the cut of
// top-k and top-p, then the draw in id order.
func pickReference(cands []layers.Candidate, s Sampling, step uint64) int32 {
	kept := slices.SortedFunc(slices.Values(cands), func(a, b layers.Candidate) int {
		switch {
		case a.Before(b):
			return -1
		case b.Before(a):
			return 1
		}
		return 0
	})
	if s.Greedy() || len(kept) == 1 {
		return kept[0].ID
	}
	top, temperature := float64(kept[0].Logit), float64(s.Temperature)
	weight := func(c layers.Candidate) float64 { return math.Exp((float64(c.Logit) - top) / temperature) }
	if s.TopK > 0 && s.TopK < len(kept) {
		kept = kept[:s.TopK]
	}
	if s.TopP > 0 && s.TopP < 1 {
		sum := 0.0
		for _, c := range slices.SortedFunc(slices.Values(kept), byID) {
			sum += weight(c)
		}
		acc := 0.0
		for i, c := range kept {
			if acc += weight(c) / sum; acc >= float64(s.TopP) {
				kept = kept[:i+1]
				break
			}
		}
	}
	kept = slices.SortedFunc(slices.Values(kept), byID)
	total := 0.0
	for _, c := range kept {
		total += weight(c)
	}
	u := rand.New(rand.NewPCG(s.Seed, step)).Float64() * total
	for _, c := range kept {
		if u < weight(c) {
			return c.ID
		}
		u -= weight(c)
	}
	return kept[len(kept)-1].ID
}

// TestPickMatchesReference: Pick chooses what the sorting reference chooses, for random
// rows with tied logits and masked (-Inf) tokens, in any order, at every top-k and top-p.
func TestPickMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 400 {
		n := 1 + r.IntN(300)
		ids := r.Perm(n + r.IntN(50))[:n] // ids need not be contiguous
		cands := make([]layers.Candidate, n)
		for i := range cands {
			logit := float32(math.Round(r.NormFloat64()*8) / 4) // quarters: many ties
			if r.IntN(20) == 0 {
				logit = float32(math.Inf(-1))
			}
			cands[i] = layers.Candidate{Logit: logit, ID: int32(ids[i])}
		}
		for _, s := range []Sampling{
			{}, {Temperature: 1}, {Temperature: 0.3}, {Temperature: 2.5},
			{Temperature: 1, TopK: 1}, {Temperature: 1, TopK: 3}, {Temperature: 0.7, TopK: 50}, {Temperature: 1, TopK: n},
			{Temperature: 1, TopP: 0.5}, {Temperature: 1.3, TopP: 0.9}, {Temperature: 1, TopP: 1e-9}, {Temperature: 1, TopP: 1},
			{Temperature: 0.8, TopK: 20, TopP: 0.6},
		} {
			s.Seed = uint64(trial)
			for step := range uint64(3) {
				want := pickReference(cands, s, step)
				shuffled := slices.Clone(cands)
				r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				require.Equal(t, want, Pick(shuffled, s, step), "trial %d, n %d, %+v, step %d", trial, n, s, step)
			}
		}
	}
}

// BenchmarkPick: one sequence's choice from a row of the full logits (standard normal
// logits times 2, in id order, as the engine passes them) against the sorting reference.
func BenchmarkPick(b *testing.B) {
	for _, vocab := range []int{4096, 32000} {
		r := rand.New(rand.NewPCG(3, uint64(vocab)))
		row := make([]layers.Candidate, vocab)
		for id := range row {
			row[id] = layers.Candidate{Logit: float32(r.NormFloat64() * 2), ID: int32(id)}
		}
		for _, s := range []Sampling{{Temperature: 1}, {Temperature: 1, TopK: 50}, {Temperature: 1, TopP: 0.9}} {
			for _, impl := range []struct {
				name string
				pick func([]layers.Candidate, Sampling, uint64) int32
			}{{"pick", Pick}, {"reference", pickReference}} {
				b.Run(fmt.Sprintf("vocab=%d/top_k=%d/top_p=%g/%s", vocab, s.TopK, s.TopP, impl.name), func(b *testing.B) {
					cands := make([]layers.Candidate, vocab)
					step := uint64(0)
					for b.Loop() {
						copy(cands, row)
						impl.pick(cands, s, step)
						step++
					}
				})
			}
		}
	}
}
