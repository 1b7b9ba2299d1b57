package models

import (
	"fmt"

	"github.com/tpslice/tpslice/layers"
)

// Gathered is what a step's last all-gather leaves on every rank: per rank, per sampled
// token, a row of Step.stride floats, its candidates (a logit and an id each) or its
// logits shard, then its samplers' terms, then its shard's log-sum-exp terms. The readers
// of a step's result (Candidates, SamplerTerms, Logits, LogSumExp) read it; a driver whose
// ranks run in processes of their own assembles it from each rank's rows (RankRows,
// NewGathered).
type Gathered struct {
	st                   Step
	world, vpr, vocab, w int
	data                 []float32 // world × len(st.Sample) rows of w
}

// NewGathered assembles the result of st from each rank's rows (rows[r], what RankRows
// returns on rank r) for a model of vocab tokens sharded vocabPerRank a rank over
// len(rows) ranks. A rank whose rows have the wrong length is an error that names it.
func NewGathered(st Step, vocabPerRank, vocab int, rows [][]float32) (Gathered, error) {
	g := Gathered{st: st, world: len(rows), vpr: vocabPerRank, vocab: vocab, w: st.stride(vocabPerRank)}
	per := len(st.Sample) * g.w
	g.data = make([]float32, 0, g.world*per)
	for r, rr := range rows {
		if len(rr) != per {
			return Gathered{}, fmt.Errorf("models: rank %d sent %d floats for %d sampled tokens of %d floats each (%d candidates, logprobs %v, samplers %v)",
				r, len(rr), len(st.Sample), g.w, st.Candidates, st.Logprobs, st.Samplers != nil)
		}
		g.data = append(g.data, rr...)
	}
	return g, nil
}

// gathered is the result of st as a local rank's buffers hold it after Forward.
func (m *Llama) gathered(st Step) Gathered {
	rk := m.ranks[m.group.Local()[0]]
	buf := rk.act.gathered
	if st.Candidates == 0 {
		buf = rk.act.full
	}
	g := Gathered{st: st, world: m.plan.World, vpr: m.plan.VocabPerRank, vocab: m.cfg.Vocab, w: st.stride(m.plan.VocabPerRank)}
	g.data = buf.Float32s()[:g.world*len(st.Sample)*g.w]
	return g
}

// RankRows returns, after a Forward of st, rank r's rows of what the step gathered (a
// copy): what a rank in a process of its own sends its driver.
func (m *Llama) RankRows(st Step, r int) []float32 {
	g := m.gathered(st)
	per := len(st.Sample) * g.w
	return append([]float32(nil), g.data[r*per:(r+1)*per]...)
}

// row is rank r's row of sampled token i.
func (g Gathered) row(r, i int) []float32 {
	return g.data[(r*len(g.st.Sample)+i)*g.w:][:g.w]
}

// SamplerTerms returns, for a step with Samplers, every rank's ShardLogSumExpAt terms of
// each sampled token's adjusted logits, in rank order (m, sum pairs).
func (g Gathered) SamplerTerms() [][]float32 {
	k := g.st.Candidates
	out := make([][]float32, len(g.st.Sample))
	for i := range out {
		for r := range g.world {
			out[i] = append(out[i], g.row(r, i)[2*k:][:2]...)
		}
	}
	return out
}

// Candidates returns, for a step with Candidates = k > 0, every rank's proposals for each
// sampled token (up to World·k of them).
func (g Gathered) Candidates() [][]layers.Candidate {
	k := g.st.Candidates
	out := make([][]layers.Candidate, len(g.st.Sample))
	for i := range out {
		for r := range g.world {
			row := g.row(r, i)
			for j := range k {
				if id := int32(row[2*j+1]); id >= 0 {
					out[i] = append(out[i], layers.Candidate{Logit: row[2*j], ID: id})
				}
			}
		}
	}
	return out
}

// Logits returns, for a step with Candidates = 0, the full-vocabulary logits of each
// sampled token.
func (g Gathered) Logits() [][]float32 {
	out := make([][]float32, len(g.st.Sample))
	for i := range out {
		for r := range g.world {
			out[i] = append(out[i], g.row(r, i)[:g.vpr]...)
		}
		out[i] = out[i][:g.vocab]
	}
	return out
}

// LogSumExp returns, for a step with Logprobs, each sampled token's log Σ exp(logit) over
// the whole vocabulary, from the two terms every rank gathered for its shard
// (layers.CombineLogSumExp, in rank order).
func (g Gathered) LogSumExp() []float64 {
	out := make([]float64, len(g.st.Sample))
	terms := make([]float32, 2*g.world)
	for i := range out {
		for r := range g.world {
			row := g.row(r, i)
			terms[2*r], terms[2*r+1] = row[g.w-2], row[g.w-1]
		}
		out[i] = layers.CombineLogSumExp(terms)
	}
	return out
}
