package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
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
	// Stop ends generation when the output contains any of these strings; the string
	// itself is not part of the output.
	Stop []string
}

// Token is one generated token and the text it completes (possibly empty: text that may
// still become a stop string, or bytes of an unfinished UTF-8 character, is held back).
type Token struct {
	ID   int32
	Text string
}

// Finish reasons, as OpenAI names them.
const (
	FinishStop   = "stop"   // EOS or a stop string
	FinishLength = "length" // MaxTokens or the context length
)

// Result summarizes a finished generation.
type Result struct {
	PromptIDs, OutputIDs []int32
	Text                 string
	FinishReason         string
	// TTFT is the time to the first token (prefill and the first choice).
	TTFT time.Duration
	// DecodeTokensPerSec counts the tokens after the first over the time after the first.
	DecodeTokensPerSec float64
	// Allreduce names the all-reduce each call site ran, for the prefill and decode steps.
	Allreduce map[string]string
}

// Generate runs one request to the end, calling emit for every token (emit's error stops
// it). Cancelling ctx stops it between tokens with ctx's error; the KV blocks are freed in
// every case.
func (e *Engine) Generate(ctx context.Context, req Request, emit func(Token) error) (Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	start := time.Now()
	cfg := e.model.Config()
	if err := req.Sampling.Validate(); err != nil {
		return Result{}, fmt.Errorf("engine: %w", err)
	}
	prompt, err := e.promptIDs(req)
	if err != nil {
		return Result{}, err
	}
	if len(prompt) >= cfg.ContextLength {
		return Result{}, fmt.Errorf("engine: the prompt has %d tokens; the context holds %d, with room for at least one more", len(prompt), cfg.ContextLength)
	}
	if req.MaxTokens < 0 {
		return Result{}, fmt.Errorf("engine: max_tokens must be ≥ 0, got %d", req.MaxTokens)
	}
	limit := cfg.ContextLength - len(prompt)
	if req.MaxTokens > 0 {
		limit = min(limit, req.MaxTokens)
	}
	bs := e.model.Options().BlockSize
	table, err := e.blocks.Alloc((len(prompt) + limit + bs - 1) / bs)
	if err != nil {
		return Result{}, err
	}
	defer e.blocks.Free(table)

	res := Result{PromptIDs: prompt, Allreduce: e.callSites(len(prompt))}
	k := candidatesFor(req.Sampling, e.greedy != nil)
	out := newOutput(e.tok.NewStream(), req.Stop)
	var first time.Time
	pos, next := 0, int32(0)
	for len(res.OutputIDs) < limit {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		ids := []int32{next}
		if pos < len(prompt) {
			ids = prompt[pos:]
		}
		ids = ids[:min(len(ids), e.model.Options().MaxTokens)]
		st, err := e.run(ids, pos, table, k)
		if err != nil {
			return res, fmt.Errorf("engine: step at position %d: %w", pos, err)
		}
		pos += len(ids)
		if pos < len(prompt) {
			continue // a prefill chunk: nothing to choose yet
		}
		next = e.choose(st, req.Sampling, uint64(len(res.OutputIDs)))
		if first.IsZero() {
			first = time.Now()
			res.TTFT = first.Sub(start)
		}
		res.OutputIDs = append(res.OutputIDs, next)
		if int(next) == e.tok.EOS() {
			res.FinishReason = FinishStop
			break
		}
		text, stopped := out.add(int(next))
		if err := emit(Token{ID: next, Text: text}); err != nil {
			return res, err
		}
		if stopped {
			res.FinishReason = FinishStop
			break
		}
	}
	if res.FinishReason == "" {
		res.FinishReason = FinishLength
	}
	if rest := out.flush(); rest != "" {
		if err := emit(Token{ID: -1, Text: rest}); err != nil {
			return res, err
		}
	}
	res.Text = out.text()
	if n := len(res.OutputIDs); n > 1 {
		res.DecodeTokensPerSec = float64(n-1) / time.Since(first).Seconds()
	}
	return res, nil
}

func (e *Engine) promptIDs(req Request) ([]int32, error) {
	if req.PromptIDs != nil {
		for i, id := range req.PromptIDs {
			if id < 0 || int(id) >= e.model.Config().Vocab {
				return nil, fmt.Errorf("engine: prompt token %d is id %d, outside the vocabulary of %d", i, id, e.model.Config().Vocab)
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

// candidatesFor is how many candidates each rank proposes: one for greedy, k for top-k,
// the full logits otherwise — and with decode graphs, which are captured for one candidate
// and for the full logits, the full logits for top-k too.
func candidatesFor(s Sampling, graphs bool) int {
	switch {
	case s.Greedy():
		return 1
	case s.TopK > 0 && s.TopK <= models.MaxCandidates && !graphs:
		return s.TopK
	}
	return 0
}

// run runs one step: a decode step by replaying its graph when there is one, anything else
// eagerly. It returns the step whose results the model now holds.
func (e *Engine) run(ids []int32, pos int, table []int32, k int) (models.Step, error) {
	g := e.full
	if k == 1 {
		g = e.greedy
	}
	if len(ids) != 1 || g == nil || (k != 1 && k != 0) {
		st := step(ids, pos, table, k)
		return st, e.model.Forward(st)
	}
	g.Step.IDs[0], g.Step.Batch.Pos[0] = ids[0], int32(pos)
	copy(g.Step.Batch.Tables[0], table)
	return g.Step, g.Replay()
}

// step is a Forward of tokens ids at positions pos… of the one running sequence.
func step(ids []int32, pos int, table []int32, k int) models.Step {
	p := make([]int32, len(ids))
	for i := range p {
		p[i] = int32(pos + i)
	}
	return models.Step{IDs: ids, Batch: layers.Batch{Pos: p, Seq: make([]int32, len(ids)), Tables: [][]int32{table}},
		Sample: []int{len(ids) - 1}, Candidates: k}
}

// choose picks the next token from what the last Forward gathered.
func (e *Engine) choose(st models.Step, s Sampling, i uint64) int32 {
	if st.Candidates > 0 {
		return Pick(e.model.Candidates(st)[0], s, i)
	}
	logits := e.model.Logits(st)[0]
	cands := make([]layers.Candidate, len(logits))
	for id, l := range logits {
		cands[id] = layers.Candidate{Logit: l, ID: int32(id)}
	}
	return Pick(cands, s, i)
}

// callSites names the all-reduce of every call site for a prefill of n tokens and for a
// one-token decode step: the fused variant (or the plain algorithm when unfused).
func (e *Engine) callSites(prefill int) map[string]string {
	c, h := e.group.Comm(), e.model.Config().Hidden
	name := func(tokens int) string {
		v := e.cfgFused()
		if v == fused.Auto {
			v = fused.Select(c, tokens*h*4)
		}
		if v == fused.Unfused {
			return c.Pick(tokens*h*4).String() + " + separate rmsnorm"
		}
		return v.String() + " fused with residual + rmsnorm"
	}
	sites := map[string]string{}
	for _, phase := range []struct {
		name   string
		tokens int
	}{{"prefill", prefill}, {"decode", 1}} {
		t := min(phase.tokens, e.model.Options().MaxTokens)
		for _, site := range []string{"embedding", "attn.o_proj", "mlp.down_proj"} {
			sites[phase.name+"/"+site] = name(t)
		}
		sites[phase.name+"/sampling"] = comm.OneShot.String() + " all-gather of candidates"
	}
	return sites
}

func (e *Engine) cfgFused() fused.Variant { return e.model.Options().Fused }

// output turns generated ids into text, holding back what may still become a stop string.
type output struct {
	stream interface {
		Add(int) string
		Flush() string
	}
	stops   []string
	all     strings.Builder // everything decoded so far
	emitted int             // bytes of all already emitted
	stopped int             // length of all at the stop string, -1 if none
}

func newOutput(stream interface {
	Add(int) string
	Flush() string
}, stops []string) *output {
	var keep []string
	for _, s := range stops {
		if s != "" {
			keep = append(keep, s)
		}
	}
	return &output{stream: stream, stops: keep, stopped: -1}
}

// add decodes id and returns the text now safe to emit, and whether a stop string ended
// the output.
func (o *output) add(id int) (string, bool) {
	o.all.WriteString(o.stream.Add(id))
	s := o.all.String()
	for _, stop := range o.stops {
		// Search from where a stop string could first overlap unemitted text.
		from := max(0, o.emitted-len(stop)+1)
		if i := strings.Index(s[from:], stop); i >= 0 && (o.stopped < 0 || from+i < o.stopped) {
			o.stopped = from + i
		}
	}
	if o.stopped >= 0 {
		text := s[o.emitted:max(o.emitted, o.stopped)]
		o.emitted = len(s)
		return text, true
	}
	safe := len(s) - o.held(s)
	text := s[o.emitted:max(o.emitted, safe)]
	o.emitted = max(o.emitted, safe)
	return text, false
}

// held is how many trailing bytes of s are a proper prefix of some stop string.
func (o *output) held(s string) int {
	n := 0
	for _, stop := range o.stops {
		for k := min(len(stop)-1, len(s)); k > n; k-- {
			if strings.HasSuffix(s, stop[:k]) {
				n = k
				break
			}
		}
	}
	return n
}

// flush returns the held-back text once generation ended without a stop string.
func (o *output) flush() string {
	if o.stopped >= 0 {
		return ""
	}
	o.all.WriteString(o.stream.Flush())
	s := o.all.String()
	text := s[o.emitted:]
	o.emitted = len(s)
	return text
}

// text is the final output: everything before the stop string, if one was found.
func (o *output) text() string {
	s := o.all.String()
	if o.stopped >= 0 {
		return s[:o.stopped]
	}
	return s
}
