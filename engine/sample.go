package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tpslice/tpslice/layers"
)

// Sampling says how the next token is chosen. The zero value is greedy.
type Sampling struct {
	// Temperature divides the logits; 0 means greedy (argmax).
	Temperature float32
	// TopK keeps the K most likely tokens (0: no limit).
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probability reaches P
	// (0 or 1: no limit).
	TopP float32
	// Seed makes sampling reproducible: the token at step i is drawn with a generator
	// seeded by (Seed, i).
	Seed uint64
}

// Validate names the first out-of-range parameter.
func (s Sampling) Validate() error {
	switch {
	case s.Temperature < 0 || math.IsNaN(float64(s.Temperature)) || math.IsInf(float64(s.Temperature), 0):
		return fmt.Errorf("temperature must be ≥ 0 and finite, got %v", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("top_k must be ≥ 0, got %d", s.TopK)
	case !(s.TopP >= 0 && s.TopP <= 1):
		return fmt.Errorf("top_p must be in [0, 1], got %v", s.TopP)
	}
	return nil
}

// Greedy reports whether the choice is a plain argmax.
func (s Sampling) Greedy() bool { return s.Temperature == 0 || s.TopK == 1 }

// Pick chooses the next token from the ranks' candidates: the best one when greedy,
// otherwise a draw from the softmax of the top-k (then top-p) candidates at the
// temperature, with the generator for (Seed, step); candidates order as layers.Candidate's
// Before (higher logit, then lower id). cands must hold every token that can be chosen (for top-k sampling, each rank's top k suffice). It sorts cands in place.
func Pick(cands []layers.Candidate, s Sampling, step uint64) int32 {
	slices.SortFunc(cands, func(a, b layers.Candidate) int {
		switch {
		case a.Before(b):
			return -1
		case b.Before(a):
			return 1
		}
		return 0
	})
	if s.Greedy() || len(cands) == 1 {
		return cands[0].ID
	}
	if s.TopK > 0 && s.TopK < len(cands) {
		cands = cands[:s.TopK]
	}
	probs := make([]float64, len(cands))
	top, sum := float64(cands[0].Logit), 0.0
	for i, c := range cands {
		probs[i] = math.Exp((float64(c.Logit) - top) / float64(s.Temperature))
		sum += probs[i]
	}
	keep := len(probs)
	if s.TopP > 0 && s.TopP < 1 {
		acc := 0.0
		for i, p := range probs {
			acc += p / sum
			if acc >= float64(s.TopP) {
				keep = i + 1
				break
			}
		}
	}
	total := 0.0
	for _, p := range probs[:keep] {
		total += p
	}
	u := rand.New(rand.NewPCG(s.Seed, step)).Float64() * total
	for i, p := range probs[:keep] {
		if u < p {
			return cands[i].ID
		}
		u -= p
	}
	return cands[keep-1].ID
}
