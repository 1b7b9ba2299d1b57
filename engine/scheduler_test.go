package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// alone runs each request by itself, one after the other, and returns their output ids.
func alone(t *testing.T, e *Engine, reqs []Request) [][]int32 {
	t.Helper()
	out := make([][]int32, len(reqs))
	for i, r := range reqs {
		res, err := e.Generate(context.Background(), r, func(Token) error { return nil })
		require.NoError(t, err, "request %d", i)
		out[i] = res.OutputIDs
	}
	return out
}

// together runs the requests concurrently and returns their output ids.
func together(t *testing.T, e *Engine, reqs []Request) [][]int32 {
	t.Helper()
	out := make([][]int32, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			res, err := e.Generate(context.Background(), r, func(Token) error { return nil })
			require.NoError(t, err, "request %d", i)
			out[i] = res.OutputIDs
		})
	}
	wg.Wait()
	return out
}

// longRequests are n requests that grow over several KV blocks each, a few of them sampled.
func longRequests(n, tokens int) []Request {
	var reqs []Request
	for i := range n {
		r := Request{Prompt: fmt.Sprintf("Request %d is a longer one that says hello to number %d and more", i, i*i), MaxTokens: tokens + i%3*5}
		if i%4 == 3 {
			r.Sampling = Sampling{Temperature: 0.8, TopK: 20, Seed: uint64(i)}
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// TestPreemptionKeepsOutputs: a KV cache of one context's blocks cannot hold 16 growing
// sequences at once, so the scheduler preempts the most recently admitted ones and
// recomputes them when they resume (from their cached blocks where prefix caching kept
// them); every request still finishes with the tokens it produces alone, each streamed
// once.
func TestPreemptionKeepsOutputs(t *testing.T) {
	for _, tc := range []struct {
		tp       int
		noPrefix bool
	}{{1, true}, {2, true}, {2, false}} {
		t.Run(fmt.Sprintf("tp=%d/no-prefix-caching=%v", tc.tp, tc.noPrefix), func(t *testing.T) {
			e, err := New(Config{Model: "tiny", TP: tc.tp, KVBlocks: 16, NoPrefixCaching: tc.noPrefix})
			require.NoError(t, err)
			defer e.Close()
			reqs := longRequests(16, 40)
			want := alone(t, e, reqs)
			require.Zero(t, e.Stats().Preemptions, "a request alone always fits")
			var wg sync.WaitGroup
			for i, r := range reqs {
				wg.Go(func() {
					var streamed []int32
					res, err := e.Generate(context.Background(), r, func(tok Token) error {
						if tok.ID >= 0 { // not the held-back text flushed at the end
							streamed = append(streamed, tok.ID)
						}
						return nil
					})
					require.NoError(t, err, "request %d", i)
					require.Equal(t, want[i], res.OutputIDs, "request %d", i)
					// Every token streamed once, in order (an end-of-generation token is not).
					require.GreaterOrEqual(t, len(streamed), len(res.OutputIDs)-1, "request %d", i)
					require.Equal(t, res.OutputIDs[:len(streamed)], streamed, "request %d", i)
				})
			}
			wg.Wait()
			t.Logf("%d preemptions", e.Stats().Preemptions)
			require.Positive(t, e.Stats().Preemptions)
			require.Zero(t, e.Blocks().InUse())
		})
	}
}

// longPrompt is a prompt of n token ids, to be prefilled over several steps.
func longPrompt(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(1 + (i*37)%500)
	}
	return ids
}

// TestChunkedPrefillKeepsOutputs: under token budgets of 1, 7 and 64 a step holds decode
// tokens and prompt chunks of several sequences (a prompt of 150 tokens over many steps),
// also split into two overlapped micro-batches, and with prompts spread over a few steps
// while others decode (PrefillSteps); every request's tokens equal those of the default
// budget, alone and running together.
func TestChunkedPrefillKeepsOutputs(t *testing.T) {
	reqs := append(longRequests(6, 12), Request{PromptIDs: longPrompt(150), MaxTokens: 10},
		Request{PromptIDs: longPrompt(40), MaxTokens: 10, Sampling: Sampling{Temperature: 1.2, TopP: 0.9, Seed: 9}})
	ref, err := New(Config{Model: "tiny", TP: 2})
	require.NoError(t, err)
	want := alone(t, ref, reqs)
	require.NoError(t, ref.Close())
	for _, tc := range []struct {
		budget, prefillSteps int
		overlap              bool
	}{{1, 0, false}, {7, 0, false}, {64, 0, false}, {7, 0, true}, {64, 4, false}, {2048, 3, true}} {
		t.Run(fmt.Sprintf("budget=%d/prefill-steps=%d/overlap=%v", tc.budget, tc.prefillSteps, tc.overlap), func(t *testing.T) {
			e, err := New(Config{Model: "tiny", TP: 2, MaxBatchTokens: tc.budget, PrefillSteps: tc.prefillSteps, Overlap: tc.overlap})
			require.NoError(t, err)
			defer e.Close()
			require.Equal(t, want, alone(t, e, reqs))
			require.Equal(t, want, together(t, e, reqs))
			require.Zero(t, e.Blocks().InUse())
		})
	}
}

// TestChunkedPrefillDoesNotStall: a long prompt prefills in chunks beside a decoding
// sequence, which keeps producing a token every step: the whole batch takes as many steps
// as the short request alone.
func TestChunkedPrefillDoesNotStall(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 2, MaxBatchTokens: 16})
	require.NoError(t, err)
	defer e.Close()
	const tokens = 20
	short := Request{PromptIDs: []int32{5, 17, 99}, MaxTokens: tokens}
	long := Request{PromptIDs: longPrompt(120), MaxTokens: 1}
	want := alone(t, e, []Request{short, long})
	require.Len(t, want[0], tokens, "the short request must not stop early for this test")

	counter := &forwardCounter{dev: e.Model().Group().Device(0)}
	e.Model().Group().Node().SetTracer(counter)
	results, err := e.GenerateBatch(context.Background(), []Request{short, long}, nil)
	e.Model().Group().Node().SetTracer(nil)
	require.NoError(t, err)
	require.Equal(t, want, [][]int32{results[0].OutputIDs, results[1].OutputIDs})
	require.EqualValues(t, tokens, counter.steps.Load(), "one step per token of the short request; the long prompt rides along")
}

// TestPrefixCacheKeepsOutputs: requests sharing a long prompt prefix reuse its cached KV
// blocks (the hits count them) and produce exactly the tokens they produce with prefix
// caching off, one after the other and running together.
func TestPrefixCacheKeepsOutputs(t *testing.T) {
	prefix := longPrompt(100)
	var reqs []Request
	for i := range 6 {
		ids := append(slices.Clone(prefix[:100-i%2*37]), int32(7+i), int32(300+i))
		r := Request{PromptIDs: ids, MaxTokens: 12 + i}
		if i%3 == 2 {
			r.Sampling = Sampling{Temperature: 0.9, TopK: 30, Seed: uint64(i)}
		}
		reqs = append(reqs, r)
	}
	reqs = append(reqs, Request{PromptIDs: slices.Clone(prefix), MaxTokens: 8}, // all of it cached but the last token
		Request{PromptIDs: slices.Clone(prefix[:96]), MaxTokens: 8}) // whole blocks: the last one is computed again
	for _, tp := range []int{1, 8} {
		t.Run(fmt.Sprintf("tp=%d", tp), func(t *testing.T) {
			off, err := New(Config{Model: "tiny", TP: tp, NoPrefixCaching: true})
			require.NoError(t, err)
			want := alone(t, off, reqs)
			require.Zero(t, off.Stats().PrefixCacheQueries)
			require.Zero(t, off.Blocks().Cached())
			require.NoError(t, off.Close())

			e, err := New(Config{Model: "tiny", TP: tp, MaxBatchTokens: 64})
			require.NoError(t, err)
			defer e.Close()
			require.Equal(t, want, alone(t, e, reqs))
			st := e.Stats()
			require.Positive(t, st.PrefixCacheHits)
			require.Less(t, st.PrefixCacheHits, st.PrefixCacheQueries)
			require.Equal(t, want, together(t, e, reqs))
			require.Greater(t, e.Stats().PrefixCacheHits-st.PrefixCacheHits, int64(len(reqs)*48), "every request finds 3 blocks of the prefix at least")
			require.Zero(t, e.Blocks().InUse())
		})
	}
}

// TestEverythingAtOnce: 32 concurrent requests (shared prefixes, a long prompt, sampled
// ones) on a KV cache of one context's blocks under a budget of 24 tokens, twice back to
// back: chunked prefill, mixed steps, preemptions and prefix-cache hits all happen, and
// every request's tokens equal those it produces alone with the defaults and no prefix
// caching; also with q8_0 weights (quantized activations) and a bf16 KV cache.
func TestEverythingAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		tp          int
		weights, kv dtype.DType
	}{{"tiny/tp=8", "tiny", 8, 0, 0}, {"stories260K/tp=2", "stories260K", 2, 0, 0},
		{"tiny/tp=2/q8_0-weights/bf16-kv", "tiny", 2, dtype.Q8_0, dtype.BF16}} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := longPrompt(40)
			reqs := longRequests(24, 20)
			for i := range 7 {
				reqs = append(reqs, Request{PromptIDs: append(slices.Clone(prefix), int32(9+i)), MaxTokens: 10 + i})
			}
			reqs = append(reqs, Request{PromptIDs: longPrompt(130), MaxTokens: 6})
			ref, err := New(Config{Model: tc.model, TP: tc.tp, WeightDType: tc.weights, KVDType: tc.kv, NoPrefixCaching: true})
			require.NoError(t, err)
			want := alone(t, ref, reqs)
			perSeq := (ref.Model().Config().ContextLength + BlockSize - 1) / BlockSize
			require.NoError(t, ref.Close())

			e, err := New(Config{Model: tc.model, TP: tc.tp, WeightDType: tc.weights, KVDType: tc.kv, KVBlocks: perSeq, MaxBatchTokens: 24})
			require.NoError(t, err)
			defer e.Close()
			for round := range 2 {
				require.Equal(t, want, together(t, e, reqs), "round %d", round)
			}
			st := e.Stats()
			t.Logf("%+v", st)
			require.Positive(t, st.Preemptions)
			require.Positive(t, st.PrefixCacheHits)
			require.Zero(t, e.Blocks().InUse())
		})
	}
}

// TestChoicesShareThePrompt: the n choices of one prompt, submitted together, compute its
// KV blocks once: the others wait for them to be cached and share them, with the tokens
// they give alone.
func TestChoicesShareThePrompt(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 2})
	require.NoError(t, err)
	defer e.Close()
	prompt := longPrompt(100)
	var reqs []Request
	for j := range 4 {
		reqs = append(reqs, Request{PromptIDs: prompt, MaxTokens: 6, Sampling: Sampling{Temperature: 1, Seed: uint64(j)}})
	}
	results, err := e.GenerateBatch(context.Background(), reqs, nil)
	require.NoError(t, err)
	st := e.Stats()
	require.Equal(t, int64(3*96), st.PrefixCacheHits, "three choices share the prompt's 6 full blocks")
	for j, want := range alone(t, e, reqs) {
		require.Equal(t, want, results[j].OutputIDs, "choice %d", j)
	}
	require.Zero(t, e.Blocks().InUse())
}
