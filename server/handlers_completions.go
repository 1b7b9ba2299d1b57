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
	body := rc.PostBody()
	p, e := decodeParams(body, "", nil)
	if e != nil {
		return e
	}
	var f completionFields
	if err := json.Unmarshal(body, &f); err != nil {
		return decodeError(err)
	}
	if f.Echo != nil && *f.Echo {
		return unsupported("echo", "echo")
	}
	if f.Suffix != nil && *f.Suffix != "" {
		return unsupported("suffix", "suffix")
	}
	if e := checkModel(p.model, l); e != nil {
		return e
	}
	ids, e := completionPrompt(f.Prompt, l.e.Tokenizer())
	if e != nil {
		return e
	}
	c := completionStream{id: newID("cmpl-"), created: time.Now().Unix(), model: l.name, includeUsage: p.includeUsage}
	return s.generate(rc, l, p, ids, "prompt", arrived, "/v1/completions", c)
}

// generate checks the prompt's ids against the context (param names the field that gave
// them), admits the request and answers it: streamed through enc, or whole once it ends.
func (s *Server) generate(rc *fasthttp.RequestCtx, l *loaded, p params, ids []int32, param string, arrived time.Time, endpoint string, enc streamer) *apiError {
	if e := checkContext(len(ids), p, l.contextLen, param); e != nil {
		return e
	}
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
		rc.SetStatusCode(statusClientClosed) // counted as a stream that was left; nobody reads it
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
