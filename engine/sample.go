package engine

import (
	"fmt"
	"math"
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

	// The logit adjustments below change the logits before the choice, on the sequence's
	// own row, in this order (vLLM's): LogitBias is added, the end-of-generation tokens are
	// masked while fewer than MinTokens were generated, then RepetitionPenalty, then
	// FrequencyPenalty and PresencePenalty apply. A sequence with any of them has its
	// step gather the full logits (see adjusts).

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

// adjusts reports whether the sampling changes logits before the choice. Such a sequence
// needs its step to gather the full logits: the candidates each rank proposes are its best
// raw logits, and a penalty can push every one of them below a token the rank did not
// propose (a bias can lift any token above them; masking EOS for min_tokens drops a
// rank's best), so the adjusted winner need not be among them. Proposing more candidates
// would not bound it either: the penalized set grows with every token generated.
func (s Sampling) adjusts() bool {
	return len(s.LogitBias) > 0 || s.MinTokens > 0 || (s.RepetitionPenalty != 0 && s.RepetitionPenalty != 1) ||
		s.FrequencyPenalty != 0 || s.PresencePenalty != 0
}

// Greedy reports whether the choice is a plain argmax.
func (s Sampling) Greedy() bool { return s.Temperature == 0 || s.TopK == 1 }

// adjust applies s's logit adjustments (see Sampling) to its full-logits row in place.
// It touches only the tokens they name, one float32 operation order for each, so the
// row's bits depend on the sequence alone, never on its batch.
func (e *Engine) adjust(s *sequence, logits []float32) {
	sp := &s.req.Sampling
	for id, b := range sp.LogitBias {
		logits[id] += b
	}
	if len(s.result.OutputIDs) < sp.MinTokens {
		masked := float32(math.Inf(-1))
		for id := range e.endOfGeneration {
			logits[id] = masked
		}
		for _, id := range s.req.StopTokenIDs {
			logits[id] = masked
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
