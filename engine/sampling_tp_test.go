package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// seededRequests are sampled requests of every kind the ranks sample TP-wise: a draw over
// the whole vocabulary, top-k, top-p, both, and penalties with bias and min_tokens.
func seededRequests() []Request {
	req := func(seed uint64, s Sampling) Request {
		s.Seed = seed
		return Request{Prompt: "Once upon a time", MaxTokens: 12, IgnoreEOS: true, Sampling: s}
	}
	return []Request{
		req(1, Sampling{Temperature: 1}),
		req(2, Sampling{Temperature: 0.8, TopK: 20}),
		req(3, Sampling{Temperature: 1, TopP: 0.9}),
		req(4, Sampling{Temperature: 1.2, TopK: 50, TopP: 0.8}),
		req(5, Sampling{Temperature: 1, FrequencyPenalty: 1, PresencePenalty: 0.5, RepetitionPenalty: 1.3,
			LogitBias: map[int32]float32{100: 4}, MinTokens: 3}),
		{Prompt: "The little dog", MaxTokens: 12, IgnoreEOS: true}, // greedy, batched with the others
	}
}

// TestSeededSamplingSameAcrossTPAndBatch: a seeded request gives the same tokens at TP 1,
// 2, 4 and 8, alone and batched with the others, on the embedded stories260K and on a
// quantized GGUF: every rank adjusts and samples its own vocabulary shard with noise keyed
// by the global token id, so neither the sharding nor the batch moves the draw. A rank
// that draws differently (its own counter, local ids) changes some token.
func TestSeededSamplingSameAcrossTPAndBatch(t *testing.T) {
	q4 := "../../shared/testdata/quant/tiny-Q4_K_M.gguf"
	for _, model := range []string{"stories260K", q4} {
		t.Run(filepath.Base(model), func(t *testing.T) {
			if model == q4 {
				if _, err := os.Stat(q4); err != nil {
					t.Skipf("shared test data not available (%v); it lives in ../shared next to the repository", err)
				}
			}
			reqs := seededRequests()
			var want [][]int32
			for _, tp := range []int{1, 2, 4, 8} {
				e, err := New(Config{Model: filepath.Clean(model), TP: tp, NoPrefixCaching: true})
				require.NoError(t, err)
				replays := func() (n int64) {
					for _, r := range e.DecodeGraphReplays() {
						n += r
					}
					return n
				}
				before := replays()
				alone := make([][]int32, len(reqs))
				for i, r := range reqs {
					res, err := e.Generate(context.Background(), r, func(Token) error { return nil })
					require.NoError(t, err)
					alone[i] = res.OutputIDs
				}
				replayed := replays() - before
				batched, err := e.GenerateBatch(context.Background(), reqs, func(int, Token) error { return nil })
				require.NoError(t, e.Close())
				require.NoError(t, err)
				require.Positive(t, replayed, "TP %d: sampled decode steps replay the graphs", tp)
				if want == nil {
					want = alone
					for i := range reqs[:len(reqs)-1] {
						require.NotEqual(t, want[len(reqs)-1], want[i], "request %d samples, not the greedy tokens", i)
					}
				}
				for i := range reqs {
					require.Equal(t, want[i], alone[i], "request %d alone at TP %d against TP 1", i, tp)
					require.Equal(t, want[i], batched[i].OutputIDs, "request %d batched at TP %d against alone at TP 1", i, tp)
				}
			}
			t.Log(fmt.Sprint(want))
		})
	}
}
