package engine

import (
	"context"
	"slices"
	"time"
)

// sequence is one request as the scheduler runs it.
type sequence struct {
	ctx    context.Context
	cancel context.CancelFunc
	req    Request
	limit  int // tokens to generate at most
	start  time.Time

	// Scheduler state, touched only by the scheduler goroutine.
	ids   []int32 // the prompt, then every token generated
	table []int32 // KV blocks of the tokens in the cache and of those the next step adds
	pos   int     // tokens of ids in the cache
	// hashes are those of the full blocks of ids hashed so far; the first cachedBlocks
	// blocks of table are in the prefix cache.
	hashes       []blockHash
	cachedBlocks int
	done         bool
	first        time.Time
	out          *output
	// counts says how often each token of the output was generated, seen which tokens
	// the prompt and the output hold: the penalties' state, kept only for a sequence whose
	// sampling adjusts its logits (nil otherwise).
	counts map[int32]int32
	seen   map[int32]bool

	tokens chan Token // to Generate's goroutine; closed when the sequence retires
	result Result     // read by Generate after tokens is closed
	err    error
}

// deliver records the token chosen for the sequence and streams its text; it marks the
// sequence done on an end-of-generation token (EOS, or an end of turn such as <|eot_id|>
// or <|im_end|>: a chat template's turn ends there; unless IgnoreEOS), one of
// StopTokenIDs, a stop string, or its token limit. The end token counts as output but
// has no text (nor logprobs). lp are the token's logprobs, nil unless asked for.
func (e *Engine) deliver(s *sequence, id int32, lp *TokenLogprobs) {
	if s.first.IsZero() {
		s.first = time.Now()
		s.result.TTFT = s.first.Sub(s.start)
	}
	s.ids = append(s.ids, id)
	s.result.OutputIDs = append(s.result.OutputIDs, id)
	if s.counts != nil {
		s.counts[id]++
		s.seen[id] = true
	}
	if e.endOfGeneration[id] && !s.req.IgnoreEOS || slices.Contains(s.req.StopTokenIDs, id) {
		s.result.FinishReason, s.done = FinishStop, true
		return
	}
	text, stopped := s.out.add(int(id))
	if lp != nil {
		s.result.Logprobs = append(s.result.Logprobs, *lp)
	}
	s.tokens <- Token{ID: id, Text: text, Logprobs: lp}
	switch {
	case stopped:
		s.result.FinishReason, s.done = FinishStop, true
	case len(s.result.OutputIDs) >= s.limit:
		s.result.FinishReason, s.done = FinishLength, true
	}
}

// reserve makes s's block table hold positions [0, n), taking the blocks it lacks from
// the pool.
func (e *Engine) reserve(s *sequence, n int) error {
	need := (n+BlockSize-1)/BlockSize - len(s.table)
	if need <= 0 {
		return nil
	}
	blocks, err := e.blocks.Alloc(need)
	if err != nil {
		return err
	}
	s.table = append(s.table, blocks...)
	return nil
}

// release frees s's blocks: none of its tokens are in the cache any more.
func (e *Engine) release(s *sequence) {
	e.blocks.Free(s.table)
	s.table, s.pos, s.cachedBlocks = nil, 0, 0
}

// retire frees the sequence's blocks, finishes its text and hands the result to Generate.
func (e *Engine) retire(s *sequence, err error) {
	e.release(s)
	if err == nil {
		err = s.ctx.Err()
	}
	s.err = err
	if err == nil {
		if rest := s.out.flush(); rest != "" {
			s.tokens <- Token{ID: -1, Text: rest}
		}
	}
	s.result.Text = s.out.text()
	e.sched.stopTextBytes.Add(s.out.scanned)
	e.sched.stopMatchSteps.Add(s.out.steps)
	if n := len(s.result.OutputIDs); n > 1 {
		s.result.DecodeTokensPerSec = float64(n-1) / time.Since(s.first).Seconds()
	}
	s.cancel()
	close(s.tokens)
}
