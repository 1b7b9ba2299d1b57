package server

import (
	"encoding/json"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/models/tokenizer"
)

// completionFields are the fields only /v1/completions has.
type completionFields struct {
	Prompt json.RawMessage `json:"prompt"`
	Echo   *bool           `json:"echo"`
	Suffix *string         `json:"suffix"`
}

// completions serves POST /v1/completions.
func (s *Server) completions(rc *fasthttp.RequestCtx, l *loaded, arrived time.Time) *apiError {
	p, prompts, echo, e := decodeCompletion(rc.PostBody(), l)
	if e != nil {
		return e
	}
	c := completionStream{id: newID("cmpl-"), created: time.Now().Unix(), model: l.name, includeUsage: p.includeUsage,
		n: p.n, echo: echo, tok: l.e.Tokenizer(), offsets: make([]int, len(prompts)*p.n)}
	return s.generate(rc, l, p, prompts, arrived, "/v1/completions", c)
}

// decodeCompletion decodes and checks a /v1/completions body: its parameters, every
// prompt's ids, which fit the context with max_tokens, and with echo each prompt's text.
func decodeCompletion(body []byte, l *loaded) (params, [][]int32, []string, *apiError) {
	p, e := decodeParams(body, l.vocab, false, "", nil)
	if e != nil {
		return p, nil, nil, e
	}
	var f completionFields
	if err := json.Unmarshal(body, &f); err != nil {
		return p, nil, nil, decodeError(err)
	}
	if f.Suffix != nil && *f.Suffix != "" {
		return p, nil, nil, unsupported("suffix", "suffix")
	}
	if e := checkModel(p.model, l); e != nil {
		return p, nil, nil, e
	}
	prompts, texts, e := completionPrompt(f.Prompt, l.e.Tokenizer())
	if e != nil {
		return p, nil, nil, e
	}
	if len(prompts)*p.n > maxChoices {
		return p, nil, nil, badRequest("n", "%d prompts of n = %d choices each are more than %d choices", len(prompts), p.n, maxChoices)
	}
	for _, ids := range prompts {
		if e := checkContext(len(ids), p, l.contextLen, "prompt"); e != nil {
			return p, nil, nil, e
		}
	}
	var echo []string
	if f.Echo != nil && *f.Echo {
		if p.logprobs {
			return p, nil, nil, unsupported("echo", "echo with logprobs (the prompt tokens' logprobs are not computed)")
		}
		echo = texts
		if echo == nil { // token ids: the text they decode to
			echo = make([]string, len(prompts))
			for i, ids := range prompts {
				text, err := l.e.Tokenizer().Decode(toInts(ids))
				if err != nil {
					return p, nil, nil, badRequest("prompt", "decoding prompt %d: %v", i, err)
				}
				echo[i] = text
			}
		}
	}
	return p, prompts, echo, nil
}

// generate admits a checked request, n choices for each prompt, and answers it: streamed
// through enc, or whole once every choice ended.
func (s *Server) generate(rc *fasthttp.RequestCtx, l *loaded, p params, prompts [][]int32, arrived time.Time, endpoint string, enc streamer) *apiError {
	promptTokens := 0
	for _, ids := range prompts {
		promptTokens += len(ids)
	}
	j, e := s.admit(l, p.requests(prompts), promptTokens, arrived)
	if e != nil {
		return e
	}
	if p.stream {
		s.stream(rc, j, endpoint, enc, p.includeUsage)
		return nil
	}
	stop := watchPeer(rc.Conn(), peerPollInterval, j.cancel)
	res, err := j.run(func(int, engine.Token) error { return nil }, nil)
	if left := stop(); left && err != nil {
		rc.SetStatusCode(statusClientClosed) // for the metrics: the client is gone
		rc.SetConnectionClose()
		return nil
	}
	if err != nil {
		return j.failure(err)
	}
	writeJSON(rc, enc.whole(res, j.usage(res)))
	return nil
}

// checkModel accepts an absent model or the served one; another is OpenAI's 404.
func checkModel(model string, l *loaded) *apiError {
	if model != "" && model != l.name {
		return modelNotFound(model, l.name)
	}
	return nil
}

// completionStream makes the chunks of a streamed completion. Choice i answers prompt
// i / n; with echo, its text starts with that prompt's.
type completionStream struct {
	id           string
	created      int64
	model        string
	includeUsage bool
	n            int
	echo         []string // each prompt's text; nil without echo
	tok          *tokenizer.Tokenizer
	offsets      []int // where choice i's next token starts in its text, for text_offset
}

func (c completionStream) chunk(choices []completionChoice, u *usage) completion {
	return completion{ID: c.id, Object: "text_completion", Created: c.created, Model: c.model, Choices: choices,
		Usage: usageJSON(u, c.includeUsage)}
}

func (c completionStream) head(i int) []any {
	if c.echo == nil {
		return nil
	}
	return []any{c.token(i, c.echo[i/c.n], nil)}
}

func (c completionStream) token(i int, text string, lps []engine.TokenLogprobs) any {
	var lp *completionLogprobs
	lp, c.offsets[i] = completionLogprobsOf(c.tok, lps, c.offsets[i])
	return c.chunk([]completionChoice{{Index: i, Text: text, Logprobs: lp}}, nil)
}

func (c completionStream) finish(i int, reason string, lps []engine.TokenLogprobs) any {
	lp, _ := completionLogprobsOf(c.tok, lps, c.offsets[i])
	return c.chunk([]completionChoice{{Index: i, FinishReason: ptr(reason), Logprobs: lp}}, nil)
}

func (c completionStream) usage(u *usage) any { return c.chunk([]completionChoice{}, u) }

func (c completionStream) whole(res []engine.Result, u *usage) any {
	choices := make([]completionChoice, len(res))
	for i, r := range res {
		text := r.Text
		if c.echo != nil {
			text = c.echo[i/c.n] + text
		}
		lp, _ := completionLogprobsOf(c.tok, r.Logprobs, 0)
		choices[i] = completionChoice{Index: i, Text: text, Logprobs: lp, FinishReason: ptr(r.FinishReason)}
	}
	return completion{ID: c.id, Object: "text_completion", Created: c.created, Model: c.model, Choices: choices,
		Usage: usageJSON(u, true)}
}
