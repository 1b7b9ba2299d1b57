package engine

import (
	"cmp"
	"math"
	"slices"

	"github.com/tpslice/tpslice/layers"
)

// nucleusCandidates is how many of its best tokens each rank proposes for a top-p
// sequence, and so the most tokens top-p keeps: the union of the ranks' best
// nucleusCandidates holds the global best nucleusCandidates at any TP degree, so capping
// the nucleus there keeps the choice independent of the sharding. A nucleus of more
// tokens is cut to them (as if top_k were nucleusCandidates as well).
const nucleusCandidates = 256

// Pick chooses the next token from the ranks' candidates (adjusted logits; duplicates
// allowed): the first in layers.Candidate's Before order when greedy, otherwise the
// Gumbel-max draw at output position pos, the candidate of the largest
// layers.Score(logit, T, Seed, pos, id) among those top-k and top-p keep. logMass is
// log Σ exp(logit/T) over the whole adjusted vocabulary (layers.CombineLogSumExpAt), which only top-p reads.
// cands must hold every token that can be chosen: each rank's Gumbel-max winner for a
// draw over the whole vocabulary, each rank's best min(TopK, nucleusCandidates) under
// top-k or top-p. It chooses what this plain loop over the full vocabulary
// (pickReference in the tests) does:
//
//	sort by Before; keep the first TopK, and the first nucleusCandidates under top-p
//	TopP: keep the shortest prefix whose Σ exp(logit/T − logMass) reaches it
//	return the kept token of the largest Score (ties: the lower id)
//
// A draw over the whole vocabulary reads no order and no mass: every rank's winner is the
// best of its shard, so the best of the winners is the vocabulary's.
func Pick(cands []layers.Candidate, s Sampling, pos uint64, logMass float64) int32 {
	if s.Greedy() || len(cands) == 1 {
		return first(cands).ID
	}
	kept := cands
	if s.truncates() {
		n := len(cands)
		if s.TopK > 0 {
			n = min(n, s.TopK)
		}
		if s.nucleus() {
			n = min(n, nucleusCandidates)
		}
		kept = make([]layers.Candidate, n)
		kept = kept[:layers.MergeTopK(kept, cands)]
		if s.nucleus() {
			kept = kept[:nucleusLen(kept, s, logMass)]
		}
	}
	best, id := math.Inf(-1), first(kept).ID // every score −Inf: the best logit
	for _, c := range kept {
		if c.Logit != c.Logit || math.IsInf(float64(c.Logit), -1) {
			continue
		}
		if sc := layers.Score(c.Logit, s.Temperature, s.Seed, pos, c.ID); sc > best || (sc == best && c.ID < id) {
			best, id = sc, c.ID
		}
	}
	return id
}

// nucleusLen is how many of the sorted candidates top-p keeps: the shortest prefix whose
// probability at the temperature reaches TopP (all of them if rounding stops short).
func nucleusLen(sorted []layers.Candidate, s Sampling, logMass float64) int {
	acc, t := 0.0, float64(s.Temperature)
	for i, c := range sorted {
		if acc += math.Exp(float64(c.Logit)/t - logMass); acc >= float64(s.TopP) {
			return i + 1
		}
	}
	return len(sorted)
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

// unique sorts cands by id and drops repeated ids: a rank's Gumbel-max winner may also be
// among its best candidates.
func unique(cands []layers.Candidate) []layers.Candidate {
	slices.SortFunc(cands, func(a, b layers.Candidate) int { return cmp.Compare(a.ID, b.ID) })
	return slices.CompactFunc(cands, func(a, b layers.Candidate) bool { return a.ID == b.ID })
}
