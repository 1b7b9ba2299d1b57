package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tpslice/tpslice/engine"
)

// job is one admitted request: its choices' generations (n per prompt), submitted to the
// engine together. For the server it is waiting from admission to its first token (the
// engine's queue and the prefill: the engine does not say when it admits one request into
// its batch) and running from then to the end; the server's running and waiting gauges,
// and the MaxWaiting bound, count jobs so. A job is used by one goroutine, but for emit
// and done, which run on one goroutine per choice.
type job struct {
	s       *Server
	l       *loaded
	reqs    []engine.Request // choice i generates reqs[i]
	prompt  int              // prompt tokens, each prompt counted once (however many choices)
	arrived time.Time
	once    sync.Once // sets first
	first   time.Time
	ctx     context.Context
	cancel  context.CancelFunc

	finished bool
}

// admit admits a request's generations unless the server is shutting down (503) or
// MaxWaiting jobs wait already (429).
func (s *Server) admit(l *loaded, reqs []engine.Request, prompt int, arrived time.Time) (*job, *apiError) {
	if s.draining.Load() {
		return nil, unavailable("shutting_down", "the server is shutting down")
	}
	for {
		w := s.waiting.Load()
		if w >= int64(s.cfg.MaxWaiting) {
			return nil, queueFull(fmt.Sprintf("%d requests are waiting, the limit (--max-waiting)", w))
		}
		if s.waiting.CompareAndSwap(w, w+1) {
			break
		}
	}
	s.metrics.waiting.Inc()
	ctx, cancel := context.WithCancel(s.abortCtx)
	return &job{s: s, l: l, reqs: reqs, prompt: prompt, arrived: arrived, ctx: ctx, cancel: cancel}, nil
}

// run generates every choice, calling emit(i, token) for choice i's tokens and done(i,
// result) when choice i ends well (nil: nothing), and settles the job's gauges and
// histograms. A choice that fails ends the others; the error is the first failure's. It
// may be called once.
func (j *job) run(emit func(i int, t engine.Token) error, done func(i int, res engine.Result)) ([]engine.Result, error) {
	results := make([]engine.Result, len(j.reqs))
	var mu sync.Mutex
	var failed error
	end := func(i int, res engine.Result, err error) {
		results[i] = res
		if err != nil {
			mu.Lock()
			if failed == nil {
				failed = err
			}
			mu.Unlock()
			j.cancel()
		} else if done != nil {
			done(i, res)
		}
	}
	started := func(i int, t engine.Token) error {
		j.once.Do(j.started)
		return emit(i, t)
	}
	var err error
	if len(j.reqs) == 1 { // Generate: what an Engine with hooks around it (tests) intercepts
		var res engine.Result
		res, err = j.l.e.Generate(j.ctx, j.reqs[0], func(t engine.Token) error { return started(0, t) })
		end(0, res, err)
	} else {
		err = j.l.e.GenerateEach(j.ctx, j.reqs, started, end)
	}
	j.finish(results)
	if err == nil {
		err = failed
	}
	return results, err
}

// started moves the job from waiting to running at its first token.
func (j *job) started() {
	j.first = time.Now()
	j.s.waiting.Add(-1)
	j.s.metrics.waiting.Dec()
	j.s.running.Add(1)
	j.s.metrics.running.Inc()
	j.s.metrics.ttft.Observe(j.first.Sub(j.arrived).Seconds())
}

// usage counts the job's tokens: each prompt once, every choice's output.
func (j *job) usage(results []engine.Result) *usage {
	out := 0
	for _, r := range results {
		out += len(r.OutputIDs)
	}
	return newUsage(j.prompt, out)
}

// finish takes the job off the gauges and records its timings and token counts.
func (j *job) finish(results []engine.Result) {
	if j.finished {
		return
	}
	j.finished = true
	j.cancel()
	m, u := j.s.metrics, j.usage(results)
	if j.first.IsZero() {
		j.s.waiting.Add(-1)
		m.waiting.Dec()
		if u.CompletionTokens > 0 { // only EOS: no token was emitted
			m.ttft.Observe(time.Since(j.arrived).Seconds())
		}
	} else {
		j.s.running.Add(-1)
		m.running.Dec()
		for _, res := range results {
			if n := len(res.OutputIDs); n > 1 {
				m.tpot.Observe(time.Since(j.first).Seconds() / float64(n-1))
			}
		}
	}
	m.promptTokens.Add(float64(j.prompt))
	m.generationTokens.Add(float64(u.CompletionTokens))
	m.e2e.Observe(time.Since(j.arrived).Seconds())
}

// failure turns a generation error into the API's error: 429 when the engine's own queue
// is full, 503 for a shutdown or an engine failure.
func (j *job) failure(err error) *apiError {
	switch {
	case errors.Is(err, engine.ErrQueueFull):
		return queueFull(err.Error())
	case errors.Is(err, engine.ErrClosed), errors.Is(err, context.Canceled) && j.s.abortCtx.Err() != nil:
		return unavailable("shutting_down", "the server shut down before the generation finished")
	case errors.Is(err, engine.ErrUnavailable):
		e := unavailable("engine_unavailable", "the engine is rebuilding its TP group after a failed step, or could not; retry later")
		e.RetryAfter = 1
		return e
	case errors.Is(err, engine.ErrStepFailed): // the server's log says why (TPSLICE_DEBUG's FAULT lines)
		e := unavailable("engine_step_failed", "a step of the TP group failed during this generation; the engine rebuilds the group, retry")
		e.RetryAfter = 1
		return e
	}
	return unavailable("engine_error", "the generation failed: %v", err)
}

// queueFull is the 429 of a full queue.
func queueFull(why string) *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Type: typeRateLimit, Code: "queue_full", Message: why + "; retry later"}
}
