package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// scheduler is the engine's queue of waiting requests; one goroutine (loop) runs steps.
type scheduler struct {
	mu      sync.Mutex
	cond    *sync.Cond
	waiting []*sequence
	// resuming are the preempted sequences, oldest first: they are admitted before any
	// waiting one, and do not count against MaxWaiting.
	resuming []*sequence
	running  int // sequences admitted and not yet retired, for Load
	closed   bool
	stopped  chan struct{}
	stats    Stats
	// spread is spreadPrefill's state between steps: the prefill tokens a step may take
	// while the backlog it was set for lasts, what of that backlog the last step left, and
	// whether that backlog is a burst, taken at the full budget.
	spread struct {
		rate, left int
		burst      bool
	}
	// stopTextBytes and stopMatchSteps are Stats' fields of the same names, added by
	// retire, which runs with and without mu.
	stopTextBytes, stopMatchSteps atomic.Int64
}

// Stats counts what the scheduler did since the engine started.
type Stats struct {
	// Preemptions counts the sequences preempted: their blocks were freed when the pool ran
	// out, and they were requeued to be recomputed (prompt and output so far) when
	// resumed, as vLLM V1 does.
	Preemptions int64
	// PrefixCacheQueries counts the tokens of the sequences admitted (or resumed) with
	// prefix caching on, PrefixCacheHits those of them found in the prefix cache (vLLM's
	// prefix_cache_queries and prefix_cache_hits).
	PrefixCacheQueries, PrefixCacheHits int64
	// StepFailures counts the steps that failed (a rank past its deadline, a kernel's
	// panic, a corrupted flag), each followed by a rebuild of the TP group.
	StepFailures int64
	// StopTextBytes counts the bytes of output text matched against stop strings and
	// StopMatchSteps the steps the stop strings' automaton took over them: at most two a
	// byte, however many and long the strings are, so that one request's stop strings
	// cannot stall the steps of every other.
	StopTextBytes, StopMatchSteps int64
}

// Stats returns the scheduler's counters, for metrics.
func (e *Engine) Stats() Stats {
	q := &e.sched
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.stats
	st.StopTextBytes, st.StopMatchSteps = q.stopTextBytes.Load(), q.stopMatchSteps.Load()
	return st
}

// submit queues sequences together, so the scheduler sees all of them at its next step
// boundary, or refuses them all when the queue has no room or the engine closed.
func (e *Engine) submit(seqs ...*sequence) error {
	q := &e.sched
	q.mu.Lock()
	defer q.mu.Unlock()
	err := e.Health() // unavailable while rebuilding, or for good
	switch {
	case err != nil:
	case q.closed:
		err = ErrClosed
	case len(q.waiting)+len(seqs) > e.cfg.MaxWaiting:
		err = fmt.Errorf("%w: %d waiting and %d more, of %d", ErrQueueFull, len(q.waiting), len(seqs), e.cfg.MaxWaiting)
	}
	if err != nil {
		for _, s := range seqs {
			s.cancel()
		}
		return err
	}
	q.waiting = append(q.waiting, seqs...)
	q.cond.Signal()
	return nil
}

// loop is continuous batching: at every step boundary it schedules the next step (what
// each running sequence computes, which waiting sequences join), runs it as one forward
// pass, and retires finished and cancelled sequences at once.
func (e *Engine) loop() {
	q := &e.sched
	defer close(q.stopped)
	var running []*sequence // in the order they were admitted
	for {
		q.mu.Lock()
		for len(running) == 0 && len(q.resuming) == 0 && len(q.waiting) == 0 && !q.closed {
			q.cond.Wait()
		}
		if q.closed {
			queued := append(q.resuming, q.waiting...)
			q.resuming, q.waiting = nil, nil
			q.mu.Unlock()
			for _, s := range append(running, queued...) {
				e.retire(s, ErrClosed)
			}
			return
		}
		running = e.retireEnded(running)
		var chunks []chunk
		running, chunks = e.schedule(running)
		q.running = len(running)
		q.mu.Unlock()

		if len(chunks) > 0 {
			start := time.Now()
			if err := e.step(chunks); err != nil {
				ok := e.recoverFrom(running, start, err)
				running = nil
				if !ok {
					e.endQueued(e.Health())
					return
				}
			}
		}
		running = e.retireEnded(running)
		q.mu.Lock()
		q.running = len(running)
		q.mu.Unlock()
	}
}

// endQueued closes the queue and retires every sequence in it with err: the engine cannot
// serve them.
func (e *Engine) endQueued(err error) {
	q := &e.sched
	q.mu.Lock()
	queued := append(q.resuming, q.waiting...)
	q.resuming, q.waiting, q.closed, q.running = nil, nil, true, 0
	q.mu.Unlock()
	for _, s := range queued {
		e.retire(s, err)
	}
}

// retireEnded retires the finished and cancelled sequences and returns the others.
func (e *Engine) retireEnded(running []*sequence) []*sequence {
	kept := running[:0]
	for _, s := range running {
		if s.done || s.ctx.Err() != nil {
			e.retire(s, nil)
		} else {
			kept = append(kept, s)
		}
	}
	return kept
}

// schedule picks the next step under the token budget (Config.MaxBatchTokens), as vLLM
// V1 does: the running sequences' tokens first (scheduleRunning), then, unless that
// preempted one, chunks of the preempted and then the waiting sequences, which join the
// running batch (admit). Called with the queue locked; returns the running batch, in
// admission order, and the step.
func (e *Engine) schedule(running []*sequence) ([]*sequence, []chunk) {
	p := &plan{running: running, budget: e.cfg.MaxBatchTokens}
	e.scheduleRunning(p)
	if !p.preempted {
		e.admit(p)
	}
	return p.running, p.chunks
}

// plan is a step being scheduled: the running batch, its chunks so far and the tokens of
// the budget left.
type plan struct {
	running   []*sequence
	chunks    []chunk
	budget    int
	preempted bool
}

// scheduleRunning gives every running sequence with one token to compute its decode
// token, then the running sequences still prefilling chunks of what is left of the
// budget (bounded by spreadPrefill), oldest first. A sequence takes the KV blocks its chunk reaches; when the pool
// runs out, the most recently admitted sequences are preempted (possibly the one asking).
// The oldest sequence always gets its chunk (the budget holds every running sequence's
// decode token and the pool one sequence of the whole context alone), so the loop never
// deadlocks.
func (e *Engine) scheduleRunning(p *plan) {
	for _, decoding := range []bool{true, false} {
		if !decoding {
			e.spreadPrefill(p)
		}
		for i := 0; i < len(p.running) && p.budget > 0; i++ {
			s := p.running[i]
			left := len(s.ids) - s.pos
			if (left == 1) != decoding {
				continue
			}
			n := min(left, p.budget)
			for e.reserve(s, s.pos+n) != nil {
				victim := p.running[len(p.running)-1]
				p.running = p.running[:len(p.running)-1]
				p.drop(victim)
				e.preempt(victim)
				p.preempted = true
				if victim == s {
					break
				}
			}
			if i < len(p.running) { // s was not preempted
				p.add(s, n)
			}
		}
	}
}

// admit moves sequences from the queue (the preempted ones first) into the running batch
// while tokens, batch slots and free KV blocks remain, each with a chunk of its tokens
// after the longest prefix it finds cached.
func (e *Engine) admit(p *plan) {
	q := &e.sched
	for p.budget > 0 && len(p.running) < e.cfg.MaxRunning {
		queue := &q.resuming
		if len(*queue) == 0 {
			queue = &q.waiting
		}
		if len(*queue) == 0 {
			return
		}
		s := (*queue)[0]
		if s.ctx.Err() != nil {
			*queue = (*queue)[1:]
			e.retire(s, nil)
			continue
		}
		if e.computingPrefix(p, s) {
			return // take the blocks from the cache once they are computed
		}
		hit := e.reusePrefix(s)
		n := min(len(s.ids)-s.pos, p.budget)
		if e.reserve(s, s.pos+n) != nil {
			e.release(s)
			return // wait for running sequences to free blocks
		}
		if !e.cfg.NoPrefixCaching {
			q.stats.PrefixCacheQueries += int64(len(s.ids))
			q.stats.PrefixCacheHits += int64(hit)
		}
		*queue = (*queue)[1:]
		p.running = append(p.running, s)
		p.add(s, n)
	}
}

// add schedules s's next n tokens.
func (p *plan) add(s *sequence, n int) {
	p.chunks = append(p.chunks, chunk{s, n})
	p.budget -= n
}

// drop unschedules s, if it was scheduled.
func (p *plan) drop(s *sequence) {
	for j, c := range p.chunks {
		if c.s == s {
			p.budget += c.n
			p.chunks = append(p.chunks[:j], p.chunks[j+1:]...)
			return
		}
	}
}

// preempt frees a running sequence's blocks and requeues it at the front of the queue
// (resuming): it resumes by prefilling its prompt and the tokens it generated so far again
// (their tokens are not streamed twice). Called with the queue locked.
func (e *Engine) preempt(s *sequence) {
	q := &e.sched
	e.release(s)
	q.resuming = append([]*sequence{s}, q.resuming...)
	q.stats.Preemptions++
}

// fail retires every sequence of a failed step with its error (wrapping ErrStepFailed);
// recoverFrom then rebuilds the TP group, whose streams and communicator it left unusable.
func (e *Engine) fail(seqs []*sequence, err error) {
	for _, s := range seqs {
		e.retire(s, fmt.Errorf("%w: %w", ErrStepFailed, err))
	}
}
