package engine

import (
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
// it, padded; any other step (or with no bucket large enough, or eager) runs eagerly.
func (e *Engine) step(chunks []chunk) error {
	var sampled []*sequence
	k := 1
	for _, c := range chunks {
		if c.last() {
			sampled = append(sampled, c.s)
			if sp := c.s.req.Sampling; !sp.Greedy() || sp.adjusts() {
				k = 0 // one candidate count per step: the full logits serve every sampler
			}
		}
	}
	var st models.Step
	if g := e.decodeGraph(chunks, k); g != nil {
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
		st = models.Step{Candidates: k}
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
		for i, id := range e.choose(st, sampled...) {
			e.deliver(sampled[i], id)
		}
	}
	return nil
}

// decodeGraph returns the decode graph for a step of one token per sequence, every one
// sampled (the smallest captured bucket holding them, for k candidates), or nil: another
// step, eager, or no bucket large enough.
func (e *Engine) decodeGraph(chunks []chunk, k int) *models.DecodeGraph {
	for _, c := range chunks {
		if c.n != 1 || !c.last() {
			return nil
		}
	}
	for _, bucket := range e.graphs.Buckets {
		if bucket >= len(chunks) {
			return e.decodeGraphs[bucket][min(k, 1)]
		}
	}
	return nil
}

// choose picks each sequence's next token (sequence i from row i of what the last step
// gathered) with its own sampling parameters; the draw of a sequence's n-th token uses
// (seed, n), so it does not depend on the batch it ran in.
func (e *Engine) choose(st models.Step, seqs ...*sequence) []int32 {
	var rows [][]layers.Candidate
	if st.Candidates > 0 {
		rows = e.model.Candidates(st)
	} else {
		for i, logits := range e.model.Logits(st)[:len(seqs)] {
			if seqs[i].counts != nil {
				e.adjust(seqs[i], logits)
			}
			cands := make([]layers.Candidate, len(logits))
			for id, l := range logits {
				cands[id] = layers.Candidate{Logit: l, ID: int32(id)}
			}
			rows = append(rows, cands)
		}
	}
	out := make([]int32, len(seqs))
	for i, s := range seqs {
		out[i] = Pick(rows[i], s.req.Sampling, uint64(len(s.result.OutputIDs)))
	}
	return out
}
