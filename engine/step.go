package engine

import (
	"slices"

	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
)

// chunk is one sequence's part of a step: its next n tokens, ids[pos:pos+n] (one for a
// decode, a piece of the prompt for a prefill; after a preemption, the prompt and the
// tokens generated before it).
type chunk struct {
	s *sequence
	n int
}

// last reports whether the chunk reaches its sequence's last token, whose logits choose
// the next one.
func (c chunk) last() bool { return c.s.pos+c.n == len(c.s.ids) }

// step runs the chunks as one forward pass of a mixed batch and chooses the next token of
// every sequence whose chunk reaches its last token, with its own sampling parameters. A
// step of decode tokens only replays the decode graph of the smallest bucket that holds
// it, padded; any other step (or with no bucket large enough, or eager, or with logprobs)
// runs eagerly.
func (e *Engine) step(chunks []chunk) error {
	var sampled []*sequence
	k, full, samplers, logprobs := 1, false, false, false
	for _, c := range chunks {
		if !c.last() {
			continue
		}
		sampled = append(sampled, c.s)
		sp, top := c.s.req.Sampling, 0
		if c.s.req.Logprobs {
			logprobs, top = true, c.s.req.TopLogprobs
		}
		need, ok := sp.candidates(top)
		k = max(k, need)
		samplers = samplers || !sp.Greedy() || sp.adjusts()
		// Logprobs are the raw logits', the candidates of an adjusted row are not: such a
		// row, and top-k wider than the ranks propose, gather the full logits.
		full = full || !ok || (c.s.req.Logprobs && sp.adjusts())
	}
	if full {
		k, samplers = 0, false // one candidate count per step: the full logits serve every row
	}
	var st models.Step
	if g := e.decodeGraph(chunks, k, logprobs); g != nil {
		for i := range g.Batch {
			if i >= len(chunks) {
				setGraphPadding(g, i, e.padBlock)
				continue
			}
			s, sp := chunks[i].s, layers.RowSampler{}
			if samplers {
				sp = e.rowSampler(s)
			}
			setGraphRow(g, i, s.ids[s.pos], int32(s.pos), s.table, sp)
		}
		if err := g.Replay(); err != nil {
			return err
		}
		st = g.Step
	} else {
		st = models.Step{Candidates: k, Logprobs: logprobs}
		for i, c := range chunks {
			for j := c.s.pos; j < c.s.pos+c.n; j++ {
				st.IDs = append(st.IDs, c.s.ids[j])
				st.Batch.Pos = append(st.Batch.Pos, int32(j))
				st.Batch.Seq = append(st.Batch.Seq, int32(i))
			}
			st.Batch.Tables = append(st.Batch.Tables, c.s.table)
			if c.last() {
				st.Sample = append(st.Sample, len(st.IDs)-1)
				if samplers {
					st.Samplers = append(st.Samplers, e.rowSampler(c.s))
				}
			}
		}
		if len(sampled) == 0 { // every step samples a token; this one's is not used
			st.Sample = []int{len(st.IDs) - 1}
		}
		if err := e.model.Forward(st); err != nil {
			return err
		}
	}
	for _, c := range chunks {
		c.s.pos += c.n
		e.cacheFull(c.s)
	}
	if len(sampled) > 0 {
		ids, lps := e.choose(st, sampled...)
		for i, id := range ids {
			var lp *TokenLogprobs
			if lps != nil {
				lp = lps[i]
			}
			e.deliver(sampled[i], id, lp)
		}
	}
	return nil
}

// setGraphRow writes row i of g's static input: token id at position pos of the
// sequence whose KV blocks are table, sampled with sp (where g samples).
func setGraphRow(g *models.DecodeGraph, i int, id, pos int32, table []int32, sp layers.RowSampler) {
	g.Step.IDs[i], g.Step.Batch.Pos[i] = id, pos
	copy(g.Step.Batch.Tables[i], table)
	if g.Step.Samplers != nil {
		g.Step.Samplers[i] = sp
	}
}

// setGraphPadding makes row i of g's static input a padding row: position 0 of the
// scratch block pad, sampled by nobody.
func setGraphPadding(g *models.DecodeGraph, i int, pad int32) {
	g.Step.IDs[i], g.Step.Batch.Pos[i], g.Step.Batch.Tables[i][0] = 0, 0, pad
	if g.Step.Samplers != nil {
		g.Step.Samplers[i] = layers.RowSampler{}
	}
}

// decodeGraph returns the decode graph for a step of one token per sequence, every one
// sampled (the smallest captured bucket holding them, for k candidates), or nil: another
// step, eager, no bucket large enough, or one the graphs were not captured for (logprobs,
// more than one candidate).
func (e *Engine) decodeGraph(chunks []chunk, k int, logprobs bool) *models.DecodeGraph {
	if logprobs || k > 1 {
		return nil
	}
	for _, c := range chunks {
		if c.n != 1 || !c.last() {
			return nil
		}
	}
	for _, bucket := range e.graphs.Buckets {
		if bucket >= len(chunks) {
			return e.decodeGraphs[bucket][k]
		}
	}
	return nil
}

// choose picks each sequence's next token (sequence i from row i of what the last step
// gathered) with its own sampling parameters, and the logprobs of those that asked; the
// draw of a sequence's n-th token is keyed by (seed, n, token id), so it depends neither
// on the batch it ran in nor on how the vocabulary is sharded.
func (e *Engine) choose(st models.Step, seqs ...*sequence) ([]int32, []*TokenLogprobs) {
	ids := make([]int32, len(seqs))
	rows := make([][]layers.Candidate, len(seqs))
	mass := make([]float64, len(seqs))
	var full [][]float32
	if st.Candidates > 0 {
		rows = e.model.Candidates(st)
		if st.Samplers != nil {
			terms := e.model.SamplerTerms(st)
			for i, s := range seqs {
				if st.Samplers[i].Draw {
					rows[i] = unique(rows[i])
				}
				if sp := s.req.Sampling; sp.nucleus() && !sp.Greedy() {
					mass[i] = layers.CombineLogSumExpAt(terms[i], sp.Temperature)
				}
			}
		}
	} else {
		full = e.model.Logits(st)[:len(seqs)]
		for i, logits := range full {
			s, sp := seqs[i], seqs[i].req.Sampling
			if sp.adjusts() {
				if s.req.Logprobs { // logprobs are the raw logits'
					logits = slices.Clone(logits)
				}
				r := e.rowSampler(s)
				r.Apply(logits, 0)
			}
			if sp.Greedy() { // Pick's choice, without a candidate per token
				best, _ := layers.Argmax(logits, 0)
				ids[i] = best.ID
				continue
			}
			if sp.nucleus() {
				m, sum := layers.ShardLogSumExpAt(logits, sp.Temperature)
				mass[i] = layers.CombineLogSumExpAt([]float32{m, float32(sum)}, sp.Temperature)
			}
			cands := make([]layers.Candidate, len(logits))
			for id, l := range logits {
				cands[id] = layers.Candidate{Logit: l, ID: int32(id)}
			}
			rows[i] = cands
		}
	}
	var lse []float64
	var lps []*TokenLogprobs
	if st.Logprobs {
		lse, lps = e.model.LogSumExp(st), make([]*TokenLogprobs, len(seqs))
	}
	for i, s := range seqs {
		if rows[i] != nil {
			ids[i] = Pick(rows[i], s.req.Sampling, uint64(len(s.result.OutputIDs)), mass[i])
		}
		if !s.req.Logprobs {
			continue
		}
		// The chosen token and the top are among the candidates (every rank's top k, k at
		// least TopLogprobs, and Pick chose from them), or in the full logits.
		lp := &TokenLogprobs{ID: ids[i], Top: make([]Logprob, 0, s.req.TopLogprobs)}
		top := make([]layers.Candidate, s.req.TopLogprobs)
		if full != nil {
			lp.Logprob = float64(full[i][ids[i]]) - lse[i]
			n, _ := layers.TopK(top, full[i], 0)
			top = top[:n]
		} else {
			top = top[:layers.MergeTopK(top, rows[i])]
			for _, c := range rows[i] {
				if c.ID == ids[i] {
					lp.Logprob = float64(c.Logit) - lse[i]
				}
			}
		}
		for _, c := range top {
			lp.Top = append(lp.Top, Logprob{ID: c.ID, Logprob: float64(c.Logit) - lse[i]})
		}
		lps[i] = lp
	}
	return ids, lps
}
