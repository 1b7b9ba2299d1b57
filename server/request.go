package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"

	"github.com/tpslice/tpslice/engine"
)

// commonParams are the request fields /v1/completions and /v1/chat/completions share.
// Pointers tell an absent field from a zero one. Fields this server does not implement are
// refused by refuseUnimplemented.
type commonParams struct {
	Model            string             `json:"model"`
	MaxTokens        *int               `json:"max_tokens"`
	Temperature      *float64           `json:"temperature"`
	TopP             *float64           `json:"top_p"`
	TopK             *int               `json:"top_k"`
	Seed             *int64             `json:"seed"`
	Stop             json.RawMessage    `json:"stop"`
	N                *int               `json:"n"`
	Stream           *bool              `json:"stream"`
	StreamOptions    *streamOptions     `json:"stream_options"`
	BestOf           *int               `json:"best_of"`
	PresencePenalty  *float64           `json:"presence_penalty"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
	Logprobs         json.RawMessage    `json:"logprobs"` // an integer for completions, a boolean for chat
	TopLogprobs      *int               `json:"top_logprobs"`
	LogitBias        map[string]float64 `json:"logit_bias"`
	// vLLM's extra sampling parameters.
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	MinTokens         *int     `json:"min_tokens"`
	IgnoreEOS         *bool    `json:"ignore_eos"`
	StopTokenIDs      []int32  `json:"stop_token_ids"`
	IncludeStopStr    *bool    `json:"include_stop_str_in_output"`
}

type streamOptions struct {
	IncludeUsage *bool `json:"include_usage"`
}

// maxChoices bounds n, the choices per prompt (and the prompts of a completions request).
const maxChoices = 128

// params are a request's checked generation parameters.
type params struct {
	model        string // as the client named it, "" when absent
	maxTokens    int    // 0 when absent: up to the context length
	maxParam     string // the field that set maxTokens, for errors
	n            int    // choices per prompt
	sampling     engine.Sampling
	stop         []string
	logprobs     bool // return the output tokens' logprobs
	topLogprobs  int  // and this many most likely tokens' at each position
	includeStop  bool
	stopTokenIDs []int32
	ignoreEOS    bool
	stream       bool
	includeUsage bool
}

// decodeParams decodes body's shared fields and checks them; token ids must be below
// vocab. maxParam and maxOverride let chat's max_completion_tokens take the place of
// max_tokens; chat reads logprobs as chat's boolean with top_logprobs, otherwise as the
// completions' integer.
func decodeParams(body []byte, vocab int, chat bool, maxParam string, maxOverride *int) (params, *apiError) {
	var c commonParams
	if err := json.Unmarshal(body, &c); err != nil {
		return params{}, decodeError(err)
	}
	if e := refuseUnimplemented(body, chat); e != nil {
		return params{}, e
	}
	p := params{model: c.Model, maxParam: "max_tokens", n: 1}
	if c.N != nil {
		if *c.N < 1 || *c.N > maxChoices {
			return p, badRequest("n", "n must be in [1, %d], got %d", maxChoices, *c.N)
		}
		p.n = *c.N
	}
	if c.BestOf != nil && *c.BestOf != p.n {
		return p, unsupported("best_of", "best_of other than n")
	}
	if e := p.decodeLogprobs(&c, chat); e != nil {
		return p, e
	}
	if e := p.decodeAdjustments(&c, vocab); e != nil {
		return p, e
	}

	maxTokens := c.MaxTokens
	if maxOverride != nil {
		maxTokens, p.maxParam = maxOverride, maxParam
	}
	if maxTokens != nil {
		if *maxTokens < 1 {
			return p, badRequest(p.maxParam, "%s must be at least 1, got %d", p.maxParam, *maxTokens)
		}
		p.maxTokens = *maxTokens
	}
	if p.maxTokens > 0 && p.sampling.MinTokens > p.maxTokens {
		return p, badRequest("min_tokens", "min_tokens must be at most %s (%d), got %d", p.maxParam, p.maxTokens, p.sampling.MinTokens)
	}

	p.sampling.Temperature = 1 // OpenAI's defaults: temperature 1, top_p 1
	if t := c.Temperature; t != nil {
		if !(*t >= 0 && *t <= 2) {
			return p, badRequest("temperature", "temperature must be in [0, 2], got %v", *t)
		}
		p.sampling.Temperature = float32(*t)
	}
	if tp := c.TopP; tp != nil {
		if !(*tp > 0 && *tp <= 1) {
			return p, badRequest("top_p", "top_p must be in (0, 1], got %v", *tp)
		}
		p.sampling.TopP = float32(*tp)
	}
	if k := c.TopK; k != nil {
		if *k < -1 {
			return p, badRequest("top_k", "top_k must be -1 or 0 (no limit) or at least 1, got %d", *k)
		}
		p.sampling.TopK = max(*k, 0)
	}
	if c.Seed != nil {
		p.sampling.Seed = uint64(*c.Seed)
	} else {
		p.sampling.Seed = rand.Uint64() // without a seed, every request draws differently
	}
	var err *apiError
	if p.stop, err = decodeStop(c.Stop); err != nil {
		return p, err
	}
	p.stream = c.Stream != nil && *c.Stream
	if c.StreamOptions != nil {
		if !p.stream {
			return p, badRequest("stream_options", "stream_options is only allowed when stream is true")
		}
		p.includeUsage = c.StreamOptions.IncludeUsage != nil && *c.StreamOptions.IncludeUsage
	}
	return p, nil
}

// unimplemented are the request fields (OpenAI's, and vLLM's extras) this server does not
// implement, with the values that mean what the server does anyway; chatOnly are chat
// completions' own (echo is the completions' parameter there). Any other value is a 400
// naming the field, so that nothing a client asks for is silently ignored. Fields that do
// not change the output (user, metadata, store, …) are ignored, as vLLM ignores them.
var (
	unimplemented = []struct {
		field    string
		defaults []string
	}{
		{"response_format", []string{`{"type":"text"}`}},
		{"min_p", []string{`0`}},
		{"use_beam_search", []string{`false`}},
		{"length_penalty", []string{`1`}},
		{"allowed_token_ids", nil},
		{"bad_words", []string{`[]`}},
		{"prompt_logprobs", nil},
		{"guided_json", nil}, {"guided_regex", nil}, {"guided_choice", nil}, {"guided_grammar", nil},
		{"structured_outputs", nil},
		{"logits_processors", nil},
		{"truncate_prompt_tokens", nil},
		{"skip_special_tokens", []string{`true`}},
		{"spaces_between_special_tokens", []string{`true`}},
	}
	chatOnly = []struct {
		field    string
		defaults []string
	}{
		{"tools", []string{`[]`}},
		{"tool_choice", []string{`"none"`, `"auto"`}},
		{"functions", []string{`[]`}},
		{"function_call", []string{`"none"`, `"auto"`}},
		{"audio", nil},
		{"modalities", []string{`["text"]`}},
		{"prediction", nil},
		{"echo", []string{`false`}},
		{"continue_final_message", []string{`false`}},
		{"add_generation_prompt", []string{`true`}},
		{"chat_template", nil},
	}
)

// refuseUnimplemented refuses a body that sets an unimplemented field to a value other
// than null or its defaults.
func refuseUnimplemented(body []byte, chat bool) *apiError {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil // decodeParams reports it
	}
	check := func(list []struct {
		field    string
		defaults []string
	}) *apiError {
		for _, u := range list {
			raw, ok := fields[u.field]
			if !ok || string(bytes.TrimSpace(raw)) == "null" {
				continue
			}
			var got any
			_ = json.Unmarshal(raw, &got)
			fine := false
			for _, d := range u.defaults {
				var want any
				_ = json.Unmarshal([]byte(d), &want)
				fine = fine || reflect.DeepEqual(got, want)
			}
			if !fine {
				return unsupported(u.field, fmt.Sprintf("%s = %s", u.field, clip(bytes.TrimSpace(raw))))
			}
		}
		return nil
	}
	if e := check(unimplemented); e != nil || !chat {
		return e
	}
	return check(chatOnly)
}

// maxCompletionLogprobs bounds the completions' logprobs (OpenAI's bound).
const maxCompletionLogprobs = 5

// decodeLogprobs reads chat's logprobs (a boolean) and top_logprobs (0 to 20, above 0 only
// with logprobs), or the completions' logprobs (an integer, 0 to 5: the sampled token's
// logprob and that many top ones'; false or null for none; completions have no
// top_logprobs).
func (p *params) decodeLogprobs(c *commonParams, chat bool) *apiError {
	raw := string(bytes.TrimSpace(c.Logprobs))
	if chat {
		if raw != "" && raw != "null" && json.Unmarshal(c.Logprobs, &p.logprobs) != nil {
			return badRequest("logprobs", "logprobs must be a boolean, got %s", clip(c.Logprobs))
		}
		if t := c.TopLogprobs; t != nil {
			switch {
			case *t < 0 || *t > engine.MaxTopLogprobs:
				return badRequest("top_logprobs", "top_logprobs must be in [0, %d], got %d", engine.MaxTopLogprobs, *t)
			case *t > 0 && !p.logprobs:
				return badRequest("top_logprobs", "top_logprobs requires logprobs to be true")
			}
			p.topLogprobs = *t
		}
		return nil
	}
	if c.TopLogprobs != nil {
		return badRequest("top_logprobs", "top_logprobs is a chat completions parameter; completions take logprobs as an integer")
	}
	if raw == "" || raw == "null" || raw == "false" {
		return nil
	}
	var n int
	if json.Unmarshal(c.Logprobs, &n) != nil || n < 0 || n > maxCompletionLogprobs {
		return badRequest("logprobs", "logprobs must be an integer in [0, %d], got %s", maxCompletionLogprobs, clip(c.Logprobs))
	}
	p.logprobs, p.topLogprobs = true, n
	return nil
}

// decodeAdjustments checks the penalties, logit_bias, min_tokens and the end-of-output
// options (OpenAI's ranges; vLLM's for its extras) into p.
func (p *params) decodeAdjustments(c *commonParams, vocab int) *apiError {
	sp := &p.sampling
	for _, f := range []struct {
		name string
		v    *float64
		to   *float32
	}{{"presence_penalty", c.PresencePenalty, &sp.PresencePenalty}, {"frequency_penalty", c.FrequencyPenalty, &sp.FrequencyPenalty}} {
		if f.v == nil {
			continue
		}
		if !(*f.v >= -2 && *f.v <= 2) {
			return badRequest(f.name, "%s must be in [-2, 2], got %v", f.name, *f.v)
		}
		*f.to = float32(*f.v)
	}
	if r := c.RepetitionPenalty; r != nil {
		if !(*r > 0 && *r <= 1e6) {
			return badRequest("repetition_penalty", "repetition_penalty must be in (0, 1e6], got %v", *r)
		}
		sp.RepetitionPenalty = float32(*r)
	}
	if len(c.LogitBias) > 0 {
		sp.LogitBias = make(map[int32]float32, len(c.LogitBias))
		for key, b := range c.LogitBias {
			id, err := strconv.ParseInt(key, 10, 32)
			switch {
			case err != nil:
				return badRequest("logit_bias", "logit_bias keys must be token ids, got %q", key)
			case id < 0 || id >= int64(vocab):
				return badRequest("logit_bias", "logit_bias names token %d, outside the vocabulary of %d", id, vocab)
			case !(b >= -100 && b <= 100):
				return badRequest("logit_bias", "logit_bias of token %d must be in [-100, 100], got %v", id, b)
			}
			sp.LogitBias[int32(id)] = float32(b)
		}
	}
	if m := c.MinTokens; m != nil {
		if *m < 0 {
			return badRequest("min_tokens", "min_tokens must be at least 0, got %d", *m)
		}
		sp.MinTokens = *m
	}
	for _, id := range c.StopTokenIDs {
		if id < 0 || int(id) >= vocab {
			return badRequest("stop_token_ids", "stop_token_ids names token %d, outside the vocabulary of %d", id, vocab)
		}
	}
	p.stopTokenIDs = c.StopTokenIDs
	p.ignoreEOS = c.IgnoreEOS != nil && *c.IgnoreEOS
	p.includeStop = c.IncludeStopStr != nil && *c.IncludeStopStr
	return nil
}

// decodeStop reads stop: null, a string, or an array of strings, within the engine's
// bounds on their number and length.
func decodeStop(raw json.RawMessage) ([]string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		list = []string{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("stop", "stop must be a string or an array of strings, got %s", clip(raw))
	}
	if len(list) > engine.MaxStopStrings {
		return nil, badRequest("stop", "stop holds %d strings; at most %d are allowed", len(list), engine.MaxStopStrings)
	}
	for i, s := range list {
		if len(s) > engine.MaxStopStringBytes {
			return nil, badRequest("stop", "stop string %d is %d bytes long; at most %d bytes (UTF-8) are allowed", i, len(s), engine.MaxStopStringBytes)
		}
	}
	return list, nil
}

// clip shortens a raw JSON value for an error message.
func clip(raw []byte) string {
	const n = 40
	if len(raw) <= n {
		return string(raw)
	}
	return string(raw[:n]) + "…"
}

// requests builds the engine requests of every choice: n for each prompt, choice j of a
// prompt drawing with seed + j (vLLM's rule), so each choice has its own stream of draws
// and with a seed all of them repeat. Choice prompt·n + j is at that index.
func (p params) requests(prompts [][]int32) []engine.Request {
	reqs := make([]engine.Request, 0, len(prompts)*p.n)
	for _, ids := range prompts {
		for j := range p.n {
			r := engine.Request{PromptIDs: ids, MaxTokens: p.maxTokens, Sampling: p.sampling, Stop: p.stop,
				IncludeStop: p.includeStop, StopTokenIDs: p.stopTokenIDs, IgnoreEOS: p.ignoreEOS,
				Logprobs: p.logprobs, TopLogprobs: p.topLogprobs}
			r.Sampling.Seed += uint64(j)
			reqs = append(reqs, r)
		}
	}
	return reqs
}
