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

// adjustReference is the plain reference of the logit adjustments on a full row, in
// vLLM's order: bias, the min_tokens mask, the repetition penalty, then the frequency
// and presence penalties.
func adjustReference(logits []float32, s *sequence, endOfGeneration map[int32]bool) {
	sp := &s.req.Sampling
	for id, b := range sp.LogitBias {
		logits[id] += b
	}
	if len(s.result.OutputIDs) < sp.MinTokens {
		for id := range endOfGeneration {
			logits[id] = float32(math.Inf(-1))
		}
		for _, id := range s.req.StopTokenIDs {
			logits[id] = float32(math.Inf(-1))
		}
	}
	if p := sp.RepetitionPenalty; p != 0 && p != 1 {
		for id := range s.seen {
			if l := logits[id]; l > 0 {
				logits[id] = l / p
			} else {
				logits[id] = l * p
			}
		}
	}
	for id, n := range s.counts {
		logits[id] -= float32(float32(n)*sp.FrequencyPenalty) + sp.PresencePenalty
	}
}

// pickReference is Pick's plain reference on a full row of adjusted logits: a sort of
// the whole vocabulary, the cut of top-k and top-p (its mass summed over the row), then
// the largest Gumbel-max score among the kept.
func pickReference(logits []float32, s Sampling, pos uint64) int32 {
	kept := make([]layers.Candidate, len(logits))
	for id, l := range logits {
		kept[id] = layers.Candidate{Logit: l, ID: int32(id)}
	}
	slices.SortFunc(kept, func(a, b layers.Candidate) int {
		switch {
		case a.Before(b):
			return -1
		case b.Before(a):
			return 1
		}
		return 0
	})
	if s.Greedy() {
		return kept[0].ID
	}
	t := float64(s.Temperature)
	if s.TopK > 0 && s.TopK < len(kept) {
		kept = kept[:s.TopK]
	}
	if s.nucleus() {
		kept = kept[:min(len(kept), nucleusCandidates)]
		top, sum := math.Inf(-1), 0.0
		for _, l := range logits {
			top = max(top, float64(l))
		}
		for _, l := range logits {
			sum += math.Exp((float64(l) - top) / t)
		}
		logMass, acc := top/t+math.Log(sum), 0.0
		for i, c := range kept {
			if acc += math.Exp(float64(c.Logit)/t - logMass); acc >= float64(s.TopP) {
				kept = kept[:i+1]
				break
			}
		}
	}
	best, id := math.Inf(-1), kept[0].ID
	for _, c := range kept {
		if math.IsInf(float64(c.Logit), -1) {
			continue
		}
		if sc := float64(c.Logit)/t + layers.Gumbel(s.Seed, pos, c.ID); sc > best || (sc == best && c.ID < id) {
			best, id = sc, c.ID
		}
	}
	return id
}

// pickSharded chooses seq's next token as the engine does at TP n: each rank adjusts
// its contiguous shard of the raw logits and proposes its candidates (RowSampler.Propose),
// and Pick chooses from their union with the combined mass terms.
func pickSharded(t *testing.T, e *Engine, seq *sequence, raw []float32, n int) int32 {
	sp := seq.req.Sampling
	k, ok := sp.candidates(0)
	require.True(t, ok)
	r := e.rowSampler(seq)
	var cands []layers.Candidate
	var terms []float32
	for rank := range n {
		v0, v1 := len(raw)*rank/n, len(raw)*(rank+1)/n
		shard := slices.Clone(raw[v0:v1])
		top := make([]layers.Candidate, min(k, len(shard)))
		got, m, sum, err := r.Propose(top, shard, v0)
		require.NoError(t, err)
		cands, terms = append(cands, top[:got]...), append(terms, m, float32(sum))
	}
	mass := 0.0
	if r.Draw {
		cands = unique(cands)
	}
	if sp.nucleus() && !sp.Greedy() {
		mass = layers.CombineLogSumExpAt(terms, sp.Temperature)
	}
	return Pick(cands, sp, r.Pos, mass)
}

// TestPickShardedMatchesReference: the TP-wise choice (every rank adjusting its shard,
// proposing its Gumbel-max winner or its best, Pick over their union) is the plain
// reference's on the full adjusted row, at TP 1 to 8, for random rows with tied and
// masked logits and random temperatures, top-k, top-p, biases, penalties and min_tokens,
// and flat rows whose nucleus is cut to nucleusCandidates.
func TestPickShardedMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	eog := map[int32]bool{0: true}
	for trial := range 300 {
		vocab := 8 + r.IntN(600)
		raw := make([]float32, vocab)
		for i := range raw {
			raw[i] = float32(math.Round(r.NormFloat64()*8) / 4) // quarters: many ties
			if r.IntN(30) == 0 {
				raw[i] = float32(math.Inf(-1))
			}
		}
		sp := Sampling{Temperature: []float32{0, 0.3, 1, 1.7}[r.IntN(4)], Seed: r.Uint64()}
		if trial%10 == 0 { // a flat row: a nucleus wider than nucleusCandidates
			vocab = 600 + r.IntN(200)
			raw = make([]float32, vocab)
			for i := range raw {
				raw[i] = float32(r.IntN(4)) / 8
			}
			sp.Temperature, sp.TopP = 1, 0.9+0.1*r.Float32()
		}
		switch r.IntN(4) {
		case 1:
			sp.TopK = 1 + r.IntN(vocab)
		case 2:
			sp.TopP = r.Float32()
		case 3:
			sp.TopK, sp.TopP = 1+r.IntN(40), r.Float32()
		}
		if trial%10 == 0 {
			sp.TopK = 0
		}
		seq := &sequence{req: Request{Sampling: sp}}
		if r.IntN(2) == 0 {
			seq.req.Sampling.LogitBias = map[int32]float32{int32(r.IntN(vocab)): float32(r.IntN(201) - 100)}
			seq.req.Sampling.MinTokens = r.IntN(3)
			seq.req.StopTokenIDs = []int32{int32(r.IntN(vocab))}
			seq.req.Sampling.RepetitionPenalty = 0.5 + 2*r.Float32()
			seq.req.Sampling.FrequencyPenalty, seq.req.Sampling.PresencePenalty = 4*r.Float32()-2, 4*r.Float32()-2
			seq.counts, seq.seen = map[int32]int32{}, map[int32]bool{}
			for range r.IntN(20) {
				id := int32(r.IntN(vocab))
				seq.counts[id]++
				seq.seen[id] = true
				seq.result.OutputIDs = append(seq.result.OutputIDs, id)
			}
		}
		e := &Engine{endOfGeneration: eog}
		full := slices.Clone(raw)
		adjustReference(full, seq, eog)
		want := pickReference(full, seq.req.Sampling, uint64(len(seq.result.OutputIDs)))
		for _, n := range []int{1, 2, 3, 4, 8} {
			require.Equal(t, want, pickSharded(t, e, seq, raw, n), "trial %d: vocab %d at TP %d, %+v", trial, vocab, n, seq.req.Sampling)
		}
	}
}

// TestPickDistribution: over many seeds, the draw's frequencies match softmax(logits/T)
// over the tokens top-k and top-p keep, within a chi-square bound (p = 0.001 for the
// degrees of freedom; the seeds are fixed, so the test is deterministic).
func TestPickDistribution(t *testing.T) {
	logits := []float32{1.5, 0.2, -0.7, 2.1, 0, -3, 0.9, 1.1}
	chi2 := map[int]float64{1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52, 6: 22.46, 7: 24.32} // p = 0.001
	for _, sp := range []Sampling{{Temperature: 1}, {Temperature: 0.6}, {Temperature: 1.8}, {Temperature: 1, TopK: 3}, {Temperature: 0.9, TopP: 0.8}} {
		t.Run(fmt.Sprintf("%+v", sp), func(t *testing.T) {
			// The kept tokens and their renormalized probabilities, from the full row.
			p := make([]float64, len(logits))
			order := slices.Clone(logits)
			slices.SortFunc(order, func(a, b float32) int { return int(math.Copysign(1, float64(b-a))) })
			kept := len(order)
			if sp.TopK > 0 {
				kept = sp.TopK
			}
			total := 0.0
			for _, l := range logits {
				total += math.Exp(float64(l) / float64(sp.Temperature))
			}
			if sp.nucleus() {
				acc := 0.0
				for i, l := range order {
					if acc += math.Exp(float64(l)/float64(sp.Temperature)) / total; acc >= float64(sp.TopP) {
						kept = min(kept, i+1)
						break
					}
				}
			}
			sum := 0.0
			for id, l := range logits {
				if l >= order[kept-1] {
					p[id] = math.Exp(float64(l) / float64(sp.Temperature))
					sum += p[id]
				}
			}
			const draws = 40000
			counts := make([]int, len(logits))
			seq := &sequence{}
			for seed := range uint64(draws) {
				seq.req.Sampling = sp
				seq.req.Sampling.Seed = seed
				counts[pickSharded(t, &Engine{}, seq, logits, 2)]++
			}
			stat := 0.0
			for id := range logits {
				if p[id] == 0 {
					require.Zero(t, counts[id], "token %d is cut", id)
					continue
				}
				want := draws * p[id] / sum
				stat += (float64(counts[id]) - want) * (float64(counts[id]) - want) / want
			}
			require.Less(t, stat, chi2[kept-1], "chi-square over %d kept tokens: counts %v", kept, counts)
		})
	}
}

// BenchmarkPick: one sequence's choice from a row of the full logits (standard normal
// logits times 2, as the engine passes them on its full-logits path).
func BenchmarkPick(b *testing.B) {
	for _, vocab := range []int{4096, 32000} {
		r := rand.New(rand.NewPCG(3, uint64(vocab)))
		row := make([]layers.Candidate, vocab)
		for id := range row {
			row[id] = layers.Candidate{Logit: float32(r.NormFloat64() * 2), ID: int32(id)}
		}
		logits := make([]float32, vocab)
		for id, c := range row {
			logits[id] = c.Logit
		}
		m, sum := layers.ShardLogSumExpAt(logits, 1)
		mass := layers.CombineLogSumExpAt([]float32{m, float32(sum)}, 1)
		for _, s := range []Sampling{{Temperature: 1}, {Temperature: 1, TopK: 50}, {Temperature: 1, TopP: 0.9}} {
			b.Run(fmt.Sprintf("vocab=%d/top_k=%d/top_p=%g", vocab, s.TopK, s.TopP), func(b *testing.B) {
				pos := uint64(0)
				for b.Loop() {
					Pick(row, s, pos, mass)
					pos++
				}
			})
		}
	}
}
