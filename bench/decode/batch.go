package decode

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/tpslice/tpslice/bench"
	"github.com/tpslice/tpslice/engine"
)

// batchRun is what one run of a batch measured.
type batchRun struct {
	ttftMs float64 // mean over requests, from the batch's submission
	// prefill is the longest TTFT: from the submission until every prompt was prefilled
	// and had its first token; promptTokens are the prompts' tokens.
	prefill      time.Duration
	promptTokens int
	// The whole batch decodes from `from` (every request has its first token) to `to` (the
	// first request has its last).
	from, to time.Time
	short    []int         // requests that stopped before genLen tokens
	tokens   int           // output tokens of the batch
	wall     time.Duration // from the submission to the last result
}

// runBatch sends b greedy requests of genLen tokens together (engine.GenerateBatch, as
// vLLM's benchmark_latency hands its engine every prompt in one call), so the scheduler
// admits them at one step boundary and they decode as one batch.
//
// Where each request's tokens fall comes from the engine's own timings — its first token at
// TTFT after the batch was submitted, its last at its decode rate after that — not from
// emit: emit runs on a goroutine per request, which lags the engine by milliseconds when
// the ranks keep every core busy.
func runBatch(ctx context.Context, e *engine.Engine, prompts [][]int32, genLen int, p *progress) (batchRun, error) {
	// The last run's requests returned before the scheduler's step ended; until it has, they
	// still count as running and the new batch would wait behind them.
	waitUntil(func() bool { r, w := e.Load(); return r == 0 && w == 0 }, ctx.Done())
	reqs := make([]engine.Request, len(prompts))
	for i, ids := range prompts {
		reqs[i] = engine.Request{PromptIDs: ids, MaxTokens: genLen}
	}
	start := time.Now()
	results, err := e.GenerateBatch(ctx, reqs, func(_ int, t engine.Token) error {
		if t.ID >= 0 { // not the held-back text flushed at the end
			p.token()
		}
		return nil
	})
	if err != nil {
		return batchRun{}, err
	}
	run := batchRun{wall: time.Since(start)}
	for i, r := range results {
		run.tokens += len(r.OutputIDs)
		run.ttftMs += bench.Ms(r.TTFT) / float64(len(results))
		run.prefill = max(run.prefill, r.TTFT)
		run.promptTokens += len(prompts[i])
		if len(r.OutputIDs) < genLen {
			run.short = append(run.short, i)
		}
		first, last := start.Add(r.TTFT), start.Add(r.TTFT)
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
// degree unless a redraw replaced it.
type promptPool struct {
	seed            uint64
	n               int
	vocab, eos, bos int
	prompts         [][]int32
	draws           []uint64 // how often prompt i was drawn
}

// setModel fixes the vocabulary once the model is loaded.
func (pp *promptPool) setModel(e *engine.Engine) {
	cfg, tok := e.Model().Config(), e.Tokenizer()
	pp.vocab, pp.eos, pp.bos = cfg.Vocab, tok.EOS(), tok.BOS()
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
