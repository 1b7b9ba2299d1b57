package engine

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tpslice/tpslice/layers"
)

// Pick chooses the next token from the ranks' candidates: the first in layers.Candidate's
// Before order (higher logit, then lower id) when greedy, otherwise a draw with the
// generator for (Seed, step) from the softmax at the temperature of the candidates that
// top-k and top-p keep. cands must hold every token that can be chosen (for top-k sampling,
// each rank's top k suffice); Pick may reorder them. It chooses what this plain loop
// (pickReference in the tests) does:
//
//	sort cands by Before; keep the first TopK; w(c) = exp((c.Logit - best logit) / T)
//	TopP: keep the shortest prefix whose Σ w / Σ w of the kept (summed in id order) reaches it
//	u = uniform [0, 1) × Σ w of the kept (in id order); walk the kept in id order, u -= w
//
// without sorting: the plain draw (no top-k, no top-p) is one pass in id order, top-k is a
// selection of the k best (layers.MergeTopK), and top-p pops the best candidates off a
// heap only until their mass reaches it, so a step's sampling is O(vocabulary) rather than
// a sort of it on the scheduler's goroutine, which every rank waits on.
func Pick(cands []layers.Candidate, s Sampling, step uint64) int32 {
	best := first(cands)
	if s.Greedy() || len(cands) == 1 {
		return best.ID
	}
	if !slices.IsSortedFunc(cands, byID) { // the engine's rows are; order makes the draw reproducible
		slices.SortFunc(cands, byID)
	}
	w := softmax{top: float64(best.Logit), temperature: float64(s.Temperature)}
	last, cut := cutoff(cands, s, w)
	total := 0.0
	for _, c := range cands {
		if !cut || !last.Before(c) {
			total += w.weight(c)
		}
	}
	u := rand.New(rand.NewPCG(s.Seed, step)).Float64() * total
	var id int32
	for _, c := range cands {
		if cut && last.Before(c) {
			continue
		}
		p := w.weight(c)
		if u < p {
			return c.ID
		}
		u -= p
		id = c.ID // rounding left u past every weight: the last kept
	}
	return id
}

// cutoff returns the last candidate in Before order that top-k and top-p keep, and whether
// they drop any (cut; else every candidate is kept). cands are in id order.
func cutoff(cands []layers.Candidate, s Sampling, w softmax) (last layers.Candidate, cut bool) {
	var top []layers.Candidate
	if s.TopK > 0 && s.TopK < len(cands) {
		top = make([]layers.Candidate, s.TopK)
		top = top[:layers.MergeTopK(top, cands)]
		last, cut = top[len(top)-1], true
	}
	if !(s.TopP > 0 && s.TopP < 1) {
		return last, cut
	}
	sum := 0.0
	for _, c := range cands {
		if !cut || !last.Before(c) {
			sum += w.weight(c)
		}
	}
	next := func() layers.Candidate { c := top[0]; top = top[1:]; return c }
	n := len(top)
	if !cut {
		h := bestFirst(slices.Clone(cands))
		h.init()
		next, n = h.pop, len(h)
	}
	acc := 0.0
	for range n {
		c := next()
		if acc += w.weight(c) / sum; acc >= float64(s.TopP) {
			return c, true
		}
	}
	return last, cut // rounding kept acc below TopP: top-p keeps them all
}

// softmax weighs a candidate by its unnormalized probability at the temperature,
// exp((logit - top) / temperature), top the best logit.
type softmax struct{ top, temperature float64 }

func (m softmax) weight(c layers.Candidate) float64 {
	return math.Exp((float64(c.Logit) - m.top) / m.temperature)
}

// first returns the first of cands in Before order.
func first(cands []layers.Candidate) layers.Candidate {
	best := cands[0]
	for _, c := range cands[1:] {
		if c.Before(best) {
			best = c
		}
	}
	return best
}

func byID(a, b layers.Candidate) int { return cmp.Compare(a.ID, b.ID) }

// bestFirst is a binary heap of candidates whose root is the first in Before order.
type bestFirst []layers.Candidate

func (h bestFirst) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// pop removes and returns the root.
func (h *bestFirst) pop() layers.Candidate {
	old := *h
	c := old[0]
	old[0] = old[len(old)-1]
	*h = old[:len(old)-1]
	h.down(0)
	return c
}

func (h bestFirst) down(i int) {
	for {
		child := 2*i + 1
		if child >= len(h) {
			return
		}
		if r := child + 1; r < len(h) && h[r].Before(h[child]) {
			child = r
		}
		if !h[child].Before(h[i]) {
			return
		}
		h[i], h[child] = h[child], h[i]
		i = child
	}
}
