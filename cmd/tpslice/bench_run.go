package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tpslice/tpslice/engine"
)

// batchRun is what one run of a batch measured.
type batchRun struct {
	ttftMs float64 // mean over requests, from when the engine was free to start the batch
	// The whole batch decodes from `from` (every request has its first token) to `to` (the
	// first request has its last).
	from, to time.Time
	short    []int // requests that stopped before genLen tokens
}

// runBatch sends b concurrent greedy requests of genLen tokens, queued behind a primer: a
// one-token request with a long prompt whose prefill holds the scheduler while the batch
// queues, so that the scheduler admits the whole batch at one step boundary, as if it arrived
// at once (vLLM's benchmark_latency hands its engine every prompt in one call). Requests
// started one by one would otherwise trickle in over several steps.
//
// Where each request's tokens fall comes from the engine's own timings — its first token at
// TTFT after its start, its last at its decode rate after that — not from emit: emit runs on
// the caller's goroutine, which lags the engine by milliseconds when the ranks keep every
// core busy.
func runBatch(ctx context.Context, e *engine.Engine, prompts [][]int32, genLen int, primer []int32, p *benchProgress) (batchRun, error) {
	var (
		primerStart time.Time
		primerRes   engine.Result
		primerErr   error
		primerDone  = make(chan struct{})
	)
	// The last run's requests returned before the scheduler's step ended; until it has, Load
	// still counts them as running and would pass for the primer's.
	waitUntil(func() bool { r, w := e.Load(); return r == 0 && w == 0 }, ctx.Done())
	go func() {
		defer close(primerDone)
		primerStart = time.Now()
		primerRes, primerErr = e.Generate(ctx, engine.Request{PromptIDs: primer, MaxTokens: 1}, func(engine.Token) error { return nil })
	}()
	waitUntil(func() bool { r, _ := e.Load(); return r > 0 }, primerDone) // the primer prefills

	var (
		starts  = make([]time.Time, len(prompts))
		results = make([]engine.Result, len(prompts))
		errs    = make([]error, len(prompts))
		wg      sync.WaitGroup
	)
	emit := func(t engine.Token) error {
		if t.ID >= 0 { // not the held-back text flushed at the end
			p.token()
		}
		return nil
	}
	for i, ids := range prompts {
		wg.Go(func() {
			starts[i] = time.Now()
			results[i], errs[i] = e.Generate(ctx, engine.Request{PromptIDs: ids, MaxTokens: genLen}, emit)
		})
	}
	waitUntil(func() bool { _, w := e.Load(); return w >= len(prompts) }, primerDone)
	wg.Wait()
	<-primerDone
	if err := errors.Join(primerErr, errors.Join(errs...)); err != nil {
		return batchRun{}, err
	}
	free := primerStart.Add(primerRes.TTFT) // the primer's prefill ended: the engine is free
	var run batchRun
	for i, r := range results {
		ttft := r.TTFT - max(0, free.Sub(starts[i]))
		run.ttftMs += float64(ttft) / float64(time.Millisecond) / float64(len(prompts))
		if len(r.OutputIDs) < genLen {
			run.short = append(run.short, i)
		}
		first, last := starts[i].Add(r.TTFT), starts[i].Add(r.TTFT)
		if k := len(r.OutputIDs); k > 1 && r.DecodeTokensPerSec > 0 {
			last = first.Add(time.Duration(float64(k-1) / r.DecodeTokensPerSec * float64(time.Second)))
		}
		if i == 0 || first.After(run.from) {
			run.from = first
		}
		if i == 0 || last.Before(run.to) {
			run.to = last
		}
	}
	return run, nil
}

// waitUntil polls cond, yielding the core between polls, until it holds or done is closed.
func waitUntil(cond func() bool, done <-chan struct{}) {
	for !cond() {
		select {
		case <-done:
			return
		default:
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// promptPool holds the seeded random prompts, request i's at index i, the same for every TP
// degree unless a redraw replaced it, and the primer's.
type promptPool struct {
	seed            uint64
	n               int
	vocab, eos, bos int
	prompts         [][]int32
	draws           []uint64 // how often prompt i was drawn
	primer          []int32
}

// setModel fixes the vocabulary and the primer once the model is loaded. The primer fills
// one prefill chunk: the longest single forward step, so the longest hold on the scheduler.
func (pp *promptPool) setModel(e *engine.Engine, chunk int) {
	cfg, tok := e.Model().Config(), e.Tokenizer()
	pp.vocab, pp.eos, pp.bos = cfg.Vocab, tok.EOS(), tok.BOS()
	pp.primer = pp.ids(1<<63, min(chunk, cfg.ContextLength-1))
}

func (pp *promptPool) get(b int) [][]int32 {
	for i := len(pp.prompts); i < b; i++ {
		pp.draws = append(pp.draws, 0)
		pp.prompts = append(pp.prompts, pp.ids(uint64(i)<<32, pp.n))
	}
	return pp.prompts[:b]
}

func (pp *promptPool) redraw(i int) {
	pp.draws[i]++
	pp.prompts[i] = pp.ids(uint64(i)<<32|pp.draws[i], pp.n)
}

// ids returns n ids of random stream `stream`, uniform over the vocabulary less BOS and EOS
// (an EOS in the prompt is harmless to the engine, but it is not text a benchmark should feed).
func (pp *promptPool) ids(stream uint64, n int) []int32 {
	rng := rand.New(rand.NewPCG(pp.seed, stream))
	ids := make([]int32, n)
	for k := range ids {
		for {
			id := rng.IntN(pp.vocab)
			if id != pp.eos && id != pp.bos {
				ids[k] = int32(id)
				break
			}
		}
	}
	return ids
}
