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
	k, top, logprobs := 1, 0, false
	for _, c := range chunks {
		if c.last() {
			sampled = append(sampled, c.s)
			if sp := c.s.req.Sampling; !sp.Greedy() || sp.adjusts() {
				k = 0 // one candidate count per step: the full logits serve every sampler
			}
			if c.s.req.Logprobs {
				logprobs, top = true, max(top, c.s.req.TopLogprobs)
			}
		}
	}
	if k > 0 {
		k = max(k, top) // greedy: each rank's top candidates hold the whole top of the vocabulary
	}
	var st models.Step
	if g := e.decodeGraph(chunks, k, logprobs); g != nil {
		for i := range g.Batch {
			if i < len(chunks) {
				s := chunks[i].s
				g.Step.IDs[i], g.Step.Batch.Pos[i] = s.ids[s.pos], int32(s.pos)
				copy(g.Step.Batch.Tables[i], s.table)
			} else { // padding: position 0 of the scratch block
				g.Step.IDs[i], g.Step.Batch.Pos[i], g.Step.Batch.Tables[i][0] = 0, 0, e.padBlock
			}
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
// draw of a sequence's n-th token uses (seed, n), so it does not depend on the batch it
// ran in.
func (e *Engine) choose(st models.Step, seqs ...*sequence) ([]int32, []*TokenLogprobs) {
	ids := make([]int32, len(seqs))
	var rows [][]layers.Candidate
	var full [][]float32
	if st.Candidates > 0 {
		rows = e.model.Candidates(st)
	} else {
		full = e.model.Logits(st)[:len(seqs)]
		rows = make([][]layers.Candidate, len(seqs))
		for i, logits := range full {
			s := seqs[i]
			if s.counts != nil {
				if s.req.Logprobs { // logprobs are the raw logits'
					logits = slices.Clone(logits)
				}
				e.adjust(s, logits)
			}
			if s.req.Sampling.Greedy() { // Pick's choice, without sorting the vocabulary
				best, _ := layers.Argmax(logits, 0)
				ids[i] = best.ID
				continue
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
		if st.Candidates > 0 || rows[i] != nil {
			ids[i] = Pick(rows[i], s.req.Sampling, uint64(len(s.result.OutputIDs)))
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
