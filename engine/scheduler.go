package engine

import (
	"fmt"
	"sync"
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
}

// Stats returns the scheduler's counters, for metrics.
func (e *Engine) Stats() Stats {
	q := &e.sched
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stats
}

// submit queues sequences together, so the scheduler sees all of them at its next step
// boundary, or refuses them all when the queue has no room or the engine closed.
func (e *Engine) submit(seqs ...*sequence) error {
	q := &e.sched
	q.mu.Lock()
	defer q.mu.Unlock()
	var err error
	switch {
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
			if err := e.step(chunks); err != nil {
				e.fail(running, err)
				running = nil
			}
		}
		running = e.retireEnded(running)
		q.mu.Lock()
		q.running = len(running)
		q.mu.Unlock()
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
// V1 does: first the decode token of every running sequence that has one token to
// compute, then prompt chunks of the running sequences still prefilling, oldest first,
// then, while tokens, batch slots and KV blocks remain, chunks of the preempted and then
// the waiting sequences, which join the running batch. A sequence takes the KV blocks its chunk reaches; when the pool
// runs out, the most recently admitted sequences are preempted (possibly the one asking),
// and nobody is admitted in that step. The oldest sequence always gets its chunk (the pool
// holds one sequence of the whole context alone), so the loop never deadlocks. Called with
// the queue locked; returns the running batch, in admission order, and the step.
func (e *Engine) schedule(running []*sequence) ([]*sequence, []chunk) {
	q := &e.sched
	budget := e.cfg.MaxBatchTokens
	var chunks []chunk
	preempted := false
	for _, decoding := range []bool{true, false} {
		for i := 0; i < len(running) && budget > 0; i++ {
			s := running[i]
			left := len(s.ids) - s.pos
			if (left == 1) != decoding {
				continue
			}
			n := min(left, budget)
			for e.reserve(s, s.pos+n) != nil {
				victim := running[len(running)-1]
				running = running[:len(running)-1]
				for j, c := range chunks {
					if c.s == victim {
						budget += c.n
						chunks = append(chunks[:j], chunks[j+1:]...)
						break
					}
				}
				e.preempt(victim)
				preempted = true
				if victim == s {
					break
				}
			}
			if i < len(running) { // s was not preempted
				chunks = append(chunks, chunk{s, n})
				budget -= n
			}
		}
	}
	for !preempted && budget > 0 && len(running) < e.cfg.MaxRunning {
		queue := &q.resuming
		if len(*queue) == 0 {
			queue = &q.waiting
		}
		if len(*queue) == 0 {
			break
		}
		s := (*queue)[0]
		if s.ctx.Err() != nil {
			*queue = (*queue)[1:]
			e.retire(s, nil)
			continue
		}
		hit := e.reusePrefix(s)
		n := min(len(s.ids)-s.pos, budget)
		if e.reserve(s, s.pos+n) != nil {
			e.release(s)
			break // wait for running sequences to free blocks
		}
		if !e.cfg.NoPrefixCaching {
			q.stats.PrefixCacheQueries += int64(len(s.ids))
			q.stats.PrefixCacheHits += int64(hit)
		}
		*queue = (*queue)[1:]
		running = append(running, s)
		chunks = append(chunks, chunk{s, n})
		budget -= n
	}
	return running, chunks
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

// fail retires every sequence with a step's error: the ranks' streams and communicator
// are unusable after a failed step.
func (e *Engine) fail(seqs []*sequence, err error) {
	for _, s := range seqs {
		e.retire(s, fmt.Errorf("engine: %w", err))
	}
}
