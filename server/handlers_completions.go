package server

import (
	"encoding/json"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tpslice/tpslice/engine"
)

// completionFields are the fields only /v1/completions has.
type completionFields struct {
	Prompt json.RawMessage `json:"prompt"`
	Echo   *bool           `json:"echo"`
	Suffix *string         `json:"suffix"`
}

// completions serves POST /v1/completions.
func (s *Server) completions(rc *fasthttp.RequestCtx, l *loaded, arrived time.Time) *apiError {
	p, ids, e := decodeCompletion(rc.PostBody(), l)
	if e != nil {
		return e
	}
	c := completionStream{id: newID("cmpl-"), created: time.Now().Unix(), model: l.name, includeUsage: p.includeUsage}
	return s.generate(rc, l, p, ids, arrived, "/v1/completions", c)
}

// decodeCompletion decodes and checks a /v1/completions body: its parameters and the
// prompt's ids, which fit the context with max_tokens.
func decodeCompletion(body []byte, l *loaded) (params, []int32, *apiError) {
	p, e := decodeParams(body, l.vocab, "", nil)
	if e != nil {
		return p, nil, e
	}
	var f completionFields
	if err := json.Unmarshal(body, &f); err != nil {
		return p, nil, decodeError(err)
	}
	if f.Echo != nil && *f.Echo {
		return p, nil, unsupported("echo", "echo")
	}
	if f.Suffix != nil && *f.Suffix != "" {
		return p, nil, unsupported("suffix", "suffix")
	}
	if e := checkModel(p.model, l); e != nil {
		return p, nil, e
	}
	ids, e := completionPrompt(f.Prompt, l.e.Tokenizer())
	if e != nil {
		return p, nil, e
	}
	return p, ids, checkContext(len(ids), p, l.contextLen, "prompt")
}

// generate admits a checked request and answers it: streamed through enc, or whole once
// it ends.
func (s *Server) generate(rc *fasthttp.RequestCtx, l *loaded, p params, ids []int32, arrived time.Time, endpoint string, enc streamer) *apiError {
	j, e := s.admit(l, p.request(ids), arrived)
	if e != nil {
		return e
	}
	if p.stream {
		s.stream(rc, j, endpoint, enc, p.includeUsage)
		return nil
	}
	stop := watchPeer(rc.Conn(), peerPollInterval, j.cancel)
	res, err := j.run(func(engine.Token) error { return nil })
	if left := stop(); left && err != nil {
		rc.SetStatusCode(statusClientClosed) // for the metrics: the client is gone
		rc.SetConnectionClose()
		return nil
	}
	if err != nil {
		return j.failure(err)
	}
	writeJSON(rc, enc.whole(res))
	return nil
}

// checkModel accepts an absent model or the served one; another is OpenAI's 404.
func checkModel(model string, l *loaded) *apiError {
	if model != "" && model != l.name {
		return modelNotFound(model, l.name)
	}
	return nil
}

// completionStream makes the chunks of a streamed completion.
type completionStream struct {
	id           string
	created      int64
	model        string
	includeUsage bool
}

func (c completionStream) chunk(choices []completionChoice, u *usage) completion {
	return completion{ID: c.id, Object: "text_completion", Created: c.created, Model: c.model, Choices: choices,
		Usage: usageJSON(u, c.includeUsage)}
}

func (c completionStream) head() []any { return nil }

func (c completionStream) token(text string) any {
	return c.chunk([]completionChoice{{Text: text}}, nil)
}

func (c completionStream) finish(reason string) any {
	return c.chunk([]completionChoice{{FinishReason: ptr(reason)}}, nil)
}

func (c completionStream) usage(u *usage) any { return c.chunk([]completionChoice{}, u) }

func (c completionStream) whole(res engine.Result) any {
	return completion{
		ID: c.id, Object: "text_completion", Created: c.created, Model: c.model,
		Choices: []completionChoice{{Text: res.Text, FinishReason: ptr(res.FinishReason)}},
		Usage:   usageJSON(newUsage(len(res.PromptIDs), len(res.OutputIDs)), true),
	}
}
