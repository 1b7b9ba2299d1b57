package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/fused"
)

// Request is one generation.
type Request struct {
	// Prompt is tokenized with the model's special tokens (BOS where the vocabulary adds
	// it); PromptIDs, when set, is used as is instead.
	Prompt    string
	PromptIDs []int32
	// MaxTokens bounds the generated tokens (0: up to the context length).
	MaxTokens int
	Sampling  Sampling
	// Stop ends generation when the output contains any of these strings (at most
	// MaxStopStrings, each at most MaxStopStringBytes of UTF-8; empty ones are ignored):
	// at the one completed first, the longest of those completed by the same byte. The
	// string itself is not part of the output unless IncludeStop (vLLM's
	// include_stop_str_in_output).
	Stop        []string
	IncludeStop bool
	// StopTokenIDs end generation as EOS does (vLLM's stop_token_ids): the token counts as
	// output but adds no text.
	StopTokenIDs []int32
	// IgnoreEOS generates past EOS and the end-of-turn tokens (vLLM's ignore_eos);
	// StopTokenIDs still end the output.
	IgnoreEOS bool
	// Logprobs asks for every output token's log-probability and those of the
	// TopLogprobs (at most MaxTopLogprobs) most likely tokens at its position: see
	// TokenLogprobs.
	Logprobs    bool
	TopLogprobs int
}

// MaxTopLogprobs bounds Request.TopLogprobs (OpenAI's bound for top_logprobs).
const MaxTopLogprobs = 20

// Logprob is a token's log-probability.
type Logprob struct {
	ID      int32
	Logprob float64
}

// TokenLogprobs are an output token's log-probability and the most likely tokens' at its
// position, best first (ties by the lower id), under the model's raw distribution: the
// log-softmax of the logits before temperature, penalties, bias and masking change them
// (vLLM's default, raw_logprobs), so they do not depend on how the token was chosen. They
// are computed TP-wise: each rank gathers its vocab shard's max and sum of exponentials
// with its candidates (models.Step.Logprobs), and the top tokens are the merged
// candidates (each rank proposes at least TopLogprobs), or the top of the full logits
// where the step gathered them anyway to sample; no step gathers the full logits for
// logprobs.
type TokenLogprobs struct {
	ID      int32 // the output token
	Logprob float64
	Top     []Logprob
}

// Token is one generated token and the text it completes (possibly empty: text that may
// still become a stop string, or bytes of an unfinished UTF-8 character, is held back).
// Logprobs are the token's when the request asked for them; the token of the final
// flush (ID -1, the held-back text) has none.
type Token struct {
	ID       int32
	Text     string
	Logprobs *TokenLogprobs
}

// Finish reasons, as OpenAI names them.
const (
	FinishStop   = "stop"   // EOS, an end-of-turn token or a stop string
	FinishLength = "length" // MaxTokens or the context length
)

// Result summarizes a finished generation.
type Result struct {
	PromptIDs, OutputIDs []int32
	// Logprobs are those of every output token but an end token (EOS, a stop token id),
	// which adds no text, when the request asked for them.
	Logprobs []TokenLogprobs
	// Text continues the prompt's text: the decode of prompt and output less the prompt's
	// (a SentencePiece output keeps its first token's leading space, as llama.cpp's server
	// and vLLM give it), so prompt text + Text is the whole text.
	Text         string
	FinishReason string
	// TTFT is the time to the first token (prefill and the first choice).
	TTFT time.Duration
	// DecodeTokensPerSec counts the tokens after the first over the time after the first.
	DecodeTokensPerSec float64
	// Allreduce names the all-reduce each call site ran, for the prefill and decode steps.
	Allreduce map[string]string
}

// ErrQueueFull is returned (wrapped) when more requests wait than Config.MaxWaiting.
var ErrQueueFull = errors.New("engine: too many requests waiting")

// ErrClosed is returned (wrapped) for requests to an engine that is shutting down.
var ErrClosed = errors.New("engine: closed")

// Generate runs one request to the end among the others in flight (continuous batching),
// calling emit on the caller's goroutine for every token; emit's error stops the request.
// Cancelling ctx stops it between steps with ctx's error. The KV blocks are freed in every
// case.
func (e *Engine) Generate(ctx context.Context, req Request, emit func(Token) error) (Result, error) {
	start := time.Now()
	stops, err := newStopStrings(req.Stop)
	if err != nil {
		return Result{}, err
	}
	seq, err := e.newSequence(ctx, req, stops, start)
	if err != nil {
		return Result{}, err
	}
	if err := e.submit(seq); err != nil {
		return Result{}, err
	}
	return e.collect(seq, emit)
}

// GenerateBatch runs requests that arrive together, as vLLM's LLM.generate takes a list:
// they enter the queue at once, so the scheduler admits them at the same step boundary
// (as many as slots and KV blocks allow) and, once prefilled, they decode as one batch.
// emit gets request i's tokens on a goroutine of request i's own (calls for different
// requests run concurrently); its error stops that request. Results are in request order;
// the error joins every request's, each naming its index. A request that fails validation
// stops the whole batch before any runs. A nil emit drops the tokens.
func (e *Engine) GenerateBatch(ctx context.Context, reqs []Request, emit func(i int, tok Token) error) ([]Result, error) {
	results, errs := make([]Result, len(reqs)), make([]error, len(reqs))
	err := e.GenerateEach(ctx, reqs, emit, func(i int, res Result, err error) {
		results[i] = res
		if err != nil {
			errs[i] = fmt.Errorf("request %d: %w", i, err)
		}
	})
	if err != nil {
		return nil, err
	}
	return results, errors.Join(errs...)
}

// GenerateEach is GenerateBatch calling done(i, result, err) as soon as request i ends,
// on request i's goroutine after its last emit (a server answering n choices of one
// request ends each choice as it finishes). It returns once every request ended; its
// error is a validation or queue error that kept all of them from running. A nil emit
// or done drops what it would get.
func (e *Engine) GenerateEach(ctx context.Context, reqs []Request, emit func(i int, tok Token) error, done func(i int, res Result, err error)) error {
	if emit == nil {
		emit = func(int, Token) error { return nil }
	}
	if done == nil {
		done = func(int, Result, error) {}
	}
	start := time.Now()
	seqs := make([]*sequence, len(reqs))
	var stops *stopStrings
	for i, req := range reqs {
		var err error
		if i == 0 || !slices.Equal(req.Stop, reqs[i-1].Stop) { // n choices share one automaton
			stops, err = newStopStrings(req.Stop)
		}
		var s *sequence
		if err == nil {
			s, err = e.newSequence(ctx, req, stops, start)
		}
		if err != nil {
			for _, prev := range seqs[:i] {
				prev.cancel()
			}
			return fmt.Errorf("request %d: %w", i, err)
		}
		seqs[i] = s
	}
	if err := e.submit(seqs...); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for i, s := range seqs {
		wg.Go(func() {
			res, err := e.collect(s, func(t Token) error { return emit(i, t) })
			done(i, res, err)
		})
	}
	wg.Wait()
	return nil
}

// collect passes a submitted sequence's tokens to emit until the scheduler retires it.
func (e *Engine) collect(seq *sequence, emit func(Token) error) (Result, error) {
	var emitErr error
	for tok := range seq.tokens { // closed by the scheduler when the sequence retires
		if emitErr == nil {
			if emitErr = emit(tok); emitErr != nil {
				seq.cancel() // the scheduler retires it at the next step
			}
		}
	}
	res, err := seq.result, seq.err
	if emitErr != nil {
		return res, emitErr
	}
	return res, err
}

// newSequence validates a request and prepares its sequence, which matches stops (the
// automaton of req.Stop, built by the caller, off the scheduler's goroutine).
func (e *Engine) newSequence(ctx context.Context, req Request, stops *stopStrings, start time.Time) (*sequence, error) {
	cfg := e.mcfg
	if err := req.Sampling.Validate(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	prompt, err := e.promptIDs(req)
	if err != nil {
		return nil, err
	}
	if len(prompt) >= cfg.ContextLength {
		return nil, fmt.Errorf("engine: the prompt has %d tokens; the context holds %d, with room for at least one more", len(prompt), cfg.ContextLength)
	}
	if req.MaxTokens < 0 {
		return nil, fmt.Errorf("engine: max_tokens must be ≥ 0, got %d", req.MaxTokens)
	}
	for id := range req.Sampling.LogitBias {
		if id < 0 || int(id) >= cfg.Vocab {
			return nil, fmt.Errorf("engine: logit_bias names token %d, outside the vocabulary of %d", id, cfg.Vocab)
		}
	}
	if req.TopLogprobs < 0 || req.TopLogprobs > MaxTopLogprobs {
		return nil, fmt.Errorf("engine: top_logprobs must be in [0, %d], got %d", MaxTopLogprobs, req.TopLogprobs)
	}
	for _, id := range req.StopTokenIDs {
		if id < 0 || int(id) >= cfg.Vocab {
			return nil, fmt.Errorf("engine: stop_token_ids names token %d, outside the vocabulary of %d", id, cfg.Vocab)
		}
	}
	limit := cfg.ContextLength - len(prompt)
	if req.MaxTokens > 0 {
		limit = min(limit, req.MaxTokens)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &sequence{
		ctx: ctx, cancel: cancel, req: req, limit: limit, start: start, ids: slices.Clone(prompt),
		out:    newOutput(e.tok.NewStreamAfter(toInts(prompt)), stops, req.IncludeStop),
		tokens: make(chan Token, limit+1),
		result: Result{PromptIDs: prompt, Allreduce: e.callSites(len(prompt))},
	}
	if req.Sampling.adjusts() {
		s.counts, s.seen = map[int32]int32{}, map[int32]bool{}
		for _, id := range prompt {
			s.seen[id] = true
		}
	}
	return s, nil
}

func (e *Engine) promptIDs(req Request) ([]int32, error) {
	if req.PromptIDs != nil {
		for i, id := range req.PromptIDs {
			if id < 0 || int(id) >= e.mcfg.Vocab {
				return nil, fmt.Errorf("engine: prompt token %d is id %d, outside the vocabulary of %d", i, id, e.mcfg.Vocab)
			}
		}
		if len(req.PromptIDs) == 0 {
			return nil, fmt.Errorf("engine: empty prompt")
		}
		return req.PromptIDs, nil
	}
	ids, err := e.tok.Encode(req.Prompt, true)
	if err != nil {
		return nil, fmt.Errorf("engine: tokenizing the prompt: %w", err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("engine: the prompt is empty and the vocabulary adds no BOS token")
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out, nil
}

// toInts widens token ids to the tokenizer's int.
func toInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// callSites names the all-reduce of every call site for a prefill of n tokens and for a
// one-token decode step: the fused variant (or the plain algorithm when unfused). None
// with worker processes: the communicators are theirs.
func (e *Engine) callSites(prefill int) map[string]string {
	m := e.Model()
	if m.Group() == nil {
		return nil
	}
	c, h := m.Group().Comm(), e.mcfg.Hidden
	name := func(tokens int) string {
		v, wire := m.Options().Fused.Resolve(c, m.Options().FusedTable, tokens, h), ""
		if w := c.Wire(); w != comm.WireExact && c.Size() > 1 {
			wire = " (" + w.String() + " wire)"
		}
		if v == fused.Unfused {
			return c.Pick(c.MessageBytes(tokens*h, dtype.F32)).Algo.String() + " + separate rmsnorm" + wire
		}
		return v.String() + " fused with residual + rmsnorm" + wire
	}
	sites := map[string]string{}
	for _, phase := range []struct {
		name   string
		tokens int
	}{{"prefill", prefill}, {"decode", 1}} {
		t := min(phase.tokens, m.Options().MaxTokens)
		for _, site := range []string{"embedding", "attn.o_proj", "mlp.down_proj"} {
			sites[phase.name+"/"+site] = name(t)
		}
		sites[phase.name+"/sampling"] = c.AllGatherAlgo().String() + " all-gather of candidates"
	}
	return sites
}
