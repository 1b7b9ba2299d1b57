package engine

import (
	"fmt"
	"sync"

	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
)

// scheduler is the engine's queue of waiting requests; one goroutine (loop) runs steps.
type scheduler struct {
	mu      sync.Mutex
	cond    *sync.Cond
	waiting []*sequence
	running int // sequences admitted and not yet retired, for Load
	closed  bool
	stopped chan struct{}
	stats   Stats
}

// Stats counts what the scheduler did since the engine started.
type Stats struct {
	// Preemptions counts the sequences preempted: their blocks were freed when the pool ran
	// out, and they were requeued to be recomputed (prompt and output so far) when
	// resumed, as vLLM V1 does.
	Preemptions int64
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

// loop is continuous batching: at every step boundary the running batch takes the KV
// blocks of its next tokens (oldest first; when the pool runs out, the most recently
// admitted sequences are preempted), then, unless one was, waiting sequences are admitted
// while KV blocks and batch slots allow; it prefills the newcomers, runs one decode step
// for the batch that was running, and retires finished and cancelled sequences at once.
func (e *Engine) loop() {
	q := &e.sched
	defer close(q.stopped)
	var running []*sequence
	for {
		q.mu.Lock()
		for len(running) == 0 && len(q.waiting) == 0 && !q.closed {
			q.cond.Wait()
		}
		if q.closed {
			waiting := q.waiting
			q.waiting = nil
			q.mu.Unlock()
			for _, s := range append(running, waiting...) {
				e.retire(s, ErrClosed)
			}
			return
		}
		preempted := false
		for i := 0; i < len(running); i++ {
			s := running[i]
			for e.reserve(s, s.pos+1) != nil { // the pool holds one sequence alone
				victim := running[len(running)-1]
				running = running[:len(running)-1]
				e.preempt(victim)
				preempted = true
				if victim == s {
					break
				}
			}
		}
		var newcomers []*sequence
		for !preempted && len(q.waiting) > 0 && len(running)+len(newcomers) < e.cfg.MaxRunning {
			s := q.waiting[0]
			if s.ctx.Err() != nil {
				q.waiting = q.waiting[1:]
				e.retire(s, nil)
				continue
			}
			if e.reserve(s, len(s.ids)) != nil {
				break // wait for running sequences to free blocks
			}
			q.waiting = q.waiting[1:]
			newcomers = append(newcomers, s)
		}
		q.running = len(running) + len(newcomers)
		q.mu.Unlock()

		// The batch that was running decodes after the newcomers' prefills; the newcomers
		// (whose prefill chose their first token) join it at the next step.
		var decoding []*sequence
		for _, s := range running {
			if s.ctx.Err() == nil {
				decoding = append(decoding, s)
			}
		}
		for _, s := range newcomers {
			if err := e.prefill(s); err != nil {
				e.fail(append(running, newcomers...), err) // each sequence retired once
				running, decoding, newcomers = nil, nil, nil
				break
			}
		}
		running = append(running, newcomers...)
		if len(decoding) > 0 {
			if err := e.decode(decoding); err != nil {
				e.fail(running, err)
				running = nil
			}
		}
		kept := running[:0]
		for _, s := range running {
			if s.done || s.ctx.Err() != nil {
				e.retire(s, nil)
			} else {
				kept = append(kept, s)
			}
		}
		running = kept
		q.mu.Lock()
		q.running = len(running)
		q.mu.Unlock()
	}
}

// fail retires every sequence with a step's error: the ranks' streams and communicator
// are unusable after a failed step.
func (e *Engine) fail(seqs []*sequence, err error) {
	for _, s := range seqs {
		e.retire(s, fmt.Errorf("engine: %w", err))
	}
}

// preempt frees a running sequence's blocks and requeues it at the front of the queue: it
// resumes by prefilling its prompt and the tokens it generated so far again. Called with
// the queue locked.
func (e *Engine) preempt(s *sequence) {
	q := &e.sched
	e.blocks.Free(s.table)
	s.table, s.pos = nil, 0
	q.waiting = append([]*sequence{s}, q.waiting...)
	q.stats.Preemptions++
}

// prefill runs a newcomer's tokens (its prompt, and when it resumes after a preemption the
// tokens it generated) in chunks and chooses its next token.
func (e *Engine) prefill(s *sequence) error {
	k := 0
	if s.req.Sampling.Greedy() {
		k = 1
	}
	end := len(s.ids)
	for s.pos < end {
		ids := s.ids[s.pos:min(end, s.pos+e.model.Options().MaxTokens)]
		st := models.Step{IDs: ids, Sample: []int{len(ids) - 1}, Candidates: k,
			Batch: layers.Batch{Pos: make([]int32, len(ids)), Seq: make([]int32, len(ids)), Tables: [][]int32{s.table}}}
		for i := range ids {
			st.Batch.Pos[i] = int32(s.pos + i)
		}
		if err := e.model.Forward(st); err != nil {
			return fmt.Errorf("prefill at position %d: %w", s.pos, err)
		}
		s.pos += len(ids)
		if s.pos == end {
			e.deliver(s, e.choose(st, s)[0])
		}
	}
	return nil
}

// decode runs one decode step for the batch — replaying the graph of the smallest bucket
// that holds it, padded, or eagerly without graphs — and chooses every sequence's next
// token with its own sampling parameters.
func (e *Engine) decode(seqs []*sequence) error {
	k := 1
	for _, s := range seqs {
		if !s.req.Sampling.Greedy() {
			k = 0 // one candidate count per step: the full logits serve every sampler
		}
	}
	var st models.Step
	if g := e.graphFor(len(seqs), k); g != nil {
		for i := range g.Batch {
			if i < len(seqs) {
				g.Step.IDs[i], g.Step.Batch.Pos[i] = seqs[i].next, int32(seqs[i].pos)
				copy(g.Step.Batch.Tables[i], seqs[i].table)
			} else { // padding: position 0 of the scratch block
				g.Step.IDs[i], g.Step.Batch.Pos[i], g.Step.Batch.Tables[i][0] = 0, 0, e.padBlock
			}
		}
		if err := g.Replay(); err != nil {
			return err
		}
		st = g.Step
	} else {
		st = models.Step{Candidates: k, Batch: layers.Batch{}}
		for i, s := range seqs {
			st.IDs = append(st.IDs, s.next)
			st.Batch.Pos = append(st.Batch.Pos, int32(s.pos))
			st.Batch.Seq = append(st.Batch.Seq, int32(i))
			st.Batch.Tables = append(st.Batch.Tables, s.table)
			st.Sample = append(st.Sample, i)
		}
		if err := e.model.Forward(st); err != nil {
			return err
		}
	}
	next := e.choose(st, seqs...)
	for i, s := range seqs {
		s.pos++
		e.deliver(s, next[i])
	}
	return nil
}

// choose picks each sequence's next token (sequence i from row i of what the last step
// gathered) with its own sampling parameters; the draw of a sequence's n-th token uses
// (seed, n), so it does not depend on the batch it ran in.
func (e *Engine) choose(st models.Step, seqs ...*sequence) []int32 {
	var rows [][]layers.Candidate
	if st.Candidates > 0 {
		rows = e.model.Candidates(st)
	} else {
		for _, logits := range e.model.Logits(st)[:len(seqs)] {
			cands := make([]layers.Candidate, len(logits))
			for id, l := range logits {
				cands[id] = layers.Candidate{Logit: l, ID: int32(id)}
			}
			rows = append(rows, cands)
		}
	}
	out := make([]int32, len(seqs))
	for i, s := range seqs {
		out[i] = Pick(rows[i], s.req.Sampling, uint64(len(s.result.OutputIDs)))
	}
	return out
}

// graphFor returns the decode graph of the smallest captured bucket holding b sequences,
// for k candidates, or nil (eager, or no bucket large enough).
func (e *Engine) graphFor(b, k int) *models.DecodeGraph {
	for _, bucket := range e.graphs.Buckets {
		if bucket >= b {
			return e.decodeGraphs[bucket][min(k, 1)]
		}
	}
	return nil
}
