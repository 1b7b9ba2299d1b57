package server

import (
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/models/tokenizer"
)

// minLogprob stands for a log-probability of −Inf (a token the model rules out), which
// JSON cannot carry: vLLM's −9999.
const minLogprob = -9999.0

func logprob(v float64) float64 { return max(v, minLogprob) }

// chatLogprobsOf turns tokens' logprobs into chat's shape; nil for none.
func chatLogprobsOf(tok *tokenizer.Tokenizer, lps []engine.TokenLogprobs) *chatLogprobs {
	if len(lps) == 0 {
		return nil
	}
	entry := func(id int32, v float64) chatTopLogprob {
		text := tok.TokenText(int(id))
		b := make([]int, len(text))
		for i := range len(text) {
			b[i] = int(text[i])
		}
		return chatTopLogprob{Token: text, Logprob: logprob(v), Bytes: b}
	}
	out := &chatLogprobs{Content: make([]chatTokenLogprob, len(lps))}
	for i, lp := range lps {
		c := chatTokenLogprob{chatTopLogprob: entry(lp.ID, lp.Logprob), TopLogprobs: make([]chatTopLogprob, len(lp.Top))}
		for j, top := range lp.Top {
			c.TopLogprobs[j] = entry(top.ID, top.Logprob)
		}
		out.Content[i] = c
	}
	return out
}

// completionLogprobsOf turns tokens' logprobs into the completions' shape, the first
// token's text starting at offset in the choice's text; nil for none. It returns the
// offset after the last token.
func completionLogprobsOf(tok *tokenizer.Tokenizer, lps []engine.TokenLogprobs, offset int) (*completionLogprobs, int) {
	if len(lps) == 0 {
		return nil, offset
	}
	out := &completionLogprobs{Tokens: make([]string, len(lps)), TokenLogprobs: make([]float64, len(lps)),
		TopLogprobs: make([]map[string]float64, len(lps)), TextOffset: make([]int, len(lps))}
	for i, lp := range lps {
		text := tok.TokenText(int(lp.ID))
		out.Tokens[i], out.TokenLogprobs[i], out.TextOffset[i] = text, logprob(lp.Logprob), offset
		top := make(map[string]float64, len(lp.Top)+1)
		for _, t := range lp.Top {
			top[tok.TokenText(int(t.ID))] = logprob(t.Logprob)
		}
		top[text] = logprob(lp.Logprob) // the sampled token is always there (OpenAI's "logprobs + 1")
		out.TopLogprobs[i] = top
		offset += len(text)
	}
	return out, offset
}
