package engine

import (
	"fmt"
	"math"

	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
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
	// Seed makes sampling reproducible: the n-th output token is the Gumbel-max draw with
	// the noise layers.Gumbel(Seed, n, id) of each token id, the same at any TP degree,
	// alone or batched.
	Seed uint64

	// The logit adjustments below change the logits before the choice, on the sequence's
	// own row, in this order (vLLM's): LogitBias is added, the end-of-generation tokens are
	// masked while fewer than MinTokens were generated, then RepetitionPenalty, then
	// FrequencyPenalty and PresencePenalty apply. Each rank applies them to its own
	// vocabulary shard (see adjusts).

	// LogitBias is added to the logits of its token ids (OpenAI's logit_bias: each in
	// [-100, 100]; -100 in effect bans a token, 100 forces it).
	LogitBias map[int32]float32
	// MinTokens masks the end-of-generation tokens (EOS, end of turn, Request.StopTokenIDs)
	// until that many tokens were generated (vLLM's min_tokens). Stop strings still apply.
	MinTokens int
	// RepetitionPenalty (vLLM's and Hugging Face's; 0 or 1: none, > 1 discourages
	// repetition) divides the positive logits of every token of the prompt or the output
	// so far by itself, and multiplies the negative ones.
	RepetitionPenalty float32
	// FrequencyPenalty and PresencePenalty (OpenAI's, in [-2, 2]) lower the logit of each
	// token generated so far by FrequencyPenalty times its count, and by PresencePenalty
	// once. They count the output only, not the prompt.
	FrequencyPenalty, PresencePenalty float32
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
	case s.MinTokens < 0:
		return fmt.Errorf("min_tokens must be ≥ 0, got %d", s.MinTokens)
	case !(s.RepetitionPenalty >= 0) || math.IsInf(float64(s.RepetitionPenalty), 0):
		return fmt.Errorf("repetition_penalty must be > 0 and finite (0: none), got %v", s.RepetitionPenalty)
	case !(s.FrequencyPenalty >= -2 && s.FrequencyPenalty <= 2):
		return fmt.Errorf("frequency_penalty must be in [-2, 2], got %v", s.FrequencyPenalty)
	case !(s.PresencePenalty >= -2 && s.PresencePenalty <= 2):
		return fmt.Errorf("presence_penalty must be in [-2, 2], got %v", s.PresencePenalty)
	}
	for id, b := range s.LogitBias {
		if !(b >= -100 && b <= 100) {
			return fmt.Errorf("logit_bias of token %d must be in [-100, 100], got %v", id, b)
		}
	}
	return nil
}

// adjusts reports whether the sampling changes logits before the choice. Each rank
// applies the changes to its own vocabulary shard (rowSampler) before proposing its
// candidates, so the adjusted winner is among them; only a step that also wants logprobs
// gathers the full logits for such a sequence, because logprobs are the raw logits'.
func (s Sampling) adjusts() bool {
	return len(s.LogitBias) > 0 || s.MinTokens > 0 || (s.RepetitionPenalty != 0 && s.RepetitionPenalty != 1) ||
		s.FrequencyPenalty != 0 || s.PresencePenalty != 0
}

// Greedy reports whether the choice is a plain argmax.
func (s Sampling) Greedy() bool { return s.Temperature == 0 || s.TopK == 1 }

// nucleus reports whether top-p cuts.
func (s Sampling) nucleus() bool { return s.TopP > 0 && s.TopP < 1 }

// truncates reports whether top-k or top-p may drop tokens before the draw.
func (s Sampling) truncates() bool { return s.TopK > 0 || s.nucleus() }

// candidates is how many of its best tokens each rank must propose for the sequence's
// choice, and whether the ranks can propose them at all (top-k beyond
// models.MaxCandidates cannot): one for greedy and for a draw over the whole vocabulary
// (each rank's Gumbel-max winner), plus the top logprobs; top-k's k; top-p's
// nucleusCandidates at most.
func (s Sampling) candidates(topLogprobs int) (k int, ok bool) {
	switch {
	case s.Greedy():
		return max(1, topLogprobs), true
	case !s.truncates():
		return 1 + topLogprobs, true
	case s.nucleus():
		k = nucleusCandidates
		if s.TopK > 0 {
			k = min(k, s.TopK)
		}
	default:
		k = s.TopK
	}
	k = max(k, topLogprobs)
	return k, k <= models.MaxCandidates
}

// rowSampler is what every rank needs to adjust and sample seq's row on its shard: the
// logit adjustments (see Sampling) as a list of the tokens they touch, each token's in one
// float32 operation order, so its adjusted logit is the same bits on any shard and in any
// batch; and the key of the draw, (Seed, the index of the token in the output).
func (e *Engine) rowSampler(seq *sequence) layers.RowSampler {
	sp := &seq.req.Sampling
	r := layers.RowSampler{Seed: sp.Seed, Pos: uint64(len(seq.result.OutputIDs)), RepetitionPenalty: sp.RepetitionPenalty}
	if !sp.Greedy() {
		r.Temperature, r.Draw, r.Terms = sp.Temperature, !sp.truncates(), sp.nucleus()
	}
	if !sp.adjusts() {
		return r
	}
	adj := map[int32]*layers.LogitAdjust{}
	at := func(id int32) *layers.LogitAdjust {
		a := adj[id]
		if a == nil {
			a = &layers.LogitAdjust{ID: id}
			adj[id] = a
		}
		return a
	}
	for id, b := range sp.LogitBias {
		at(id).Bias = b
	}
	if len(seq.result.OutputIDs) < sp.MinTokens {
		for id := range e.endOfGeneration {
			at(id).Mask = true
		}
		for _, id := range seq.req.StopTokenIDs {
			at(id).Mask = true
		}
	}
	if p := sp.RepetitionPenalty; p != 0 && p != 1 {
		for id := range seq.seen {
			at(id).Repeat = true
		}
	}
	for id, n := range seq.counts {
		at(id).Sub = float32(float32(n)*sp.FrequencyPenalty) + sp.PresencePenalty
	}
	r.Adjust = make([]layers.LogitAdjust, 0, len(adj))
	for _, a := range adj {
		r.Adjust = append(r.Adjust, *a)
	}
	return r
}
