package engine

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
)

// refLogSoftmax runs ids through the model as one prefill and returns the f64 log-softmax
// of the last token's full logits (Model.Logits), on blocks taken from the pool.
func refLogSoftmax(t *testing.T, e *Engine, ids []int32) []float64 {
	t.Helper()
	table, err := e.blocks.Alloc((len(ids) + BlockSize - 1) / BlockSize)
	require.NoError(t, err)
	defer e.blocks.Free(table)
	st := models.Step{IDs: ids, Sample: []int{len(ids) - 1},
		Batch: layers.Batch{Pos: make([]int32, len(ids)), Seq: make([]int32, len(ids)), Tables: [][]int32{table}}}
	for i := range ids {
		st.Batch.Pos[i] = int32(i)
	}
	require.NoError(t, e.Model().Forward(st))
	logits := e.Model().Logits(st)[0]
	out := make([]float64, len(logits))
	for i, l := range logits {
		out[i] = float64(l)
	}
	floats.AddConst(-floats.LogSumExp(out), out)
	return out
}

// TestLogprobs: every output token's logprob and top logprobs equal a f64 log-softmax of
// the full logits at its position to 1e-5, and the top ones are the true top (ties by id),
// at TP 1 and 8 (the tiny preset, and llama.cpp's tiny GGUF where ../shared has it), for greedy requests (through the candidates), sampled and penalized ones
// (through the full logits: the raw distribution, not the penalized one); they are the
// same alone and in a batch, and streamed with their tokens.
func TestLogprobs(t *testing.T) {
	reqs := []Request{
		{Prompt: "Hello my name is", MaxTokens: 6, Logprobs: true, TopLogprobs: 5},
		{Prompt: "x", MaxTokens: 6, Logprobs: true, TopLogprobs: MaxTopLogprobs, Sampling: Sampling{Temperature: 1, Seed: 3}},
		{Prompt: "x", MaxTokens: 6, Logprobs: true, Sampling: Sampling{FrequencyPenalty: 2, RepetitionPenalty: 1.5}},
		{Prompt: "a b c", MaxTokens: 6}, // no logprobs beside ones that ask
	}
	files := []string{"tiny"}
	if _, err := os.Stat(tinyGGUF); err == nil {
		files = append(files, tinyGGUF) // llama.cpp's tiny model, its SentencePiece vocabulary
	}
	for _, run := range []struct{ file, tp int }{{0, 1}, {0, 8}, {1, 1}, {1, 8}} {
		if run.file >= len(files) {
			continue
		}
		model, tp := files[run.file], run.tp
		t.Run(fmt.Sprintf("%s/tp=%d", filepath.Base(model), tp), func(t *testing.T) {
			e, err := New(Config{Model: model, TP: tp, NoPrefixCaching: true})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			alone := make([]Result, len(reqs))
			for i, r := range reqs {
				var streamed []TokenLogprobs
				alone[i], err = e.Generate(context.Background(), r, func(tok Token) error {
					if tok.Logprobs != nil {
						streamed = append(streamed, *tok.Logprobs)
					}
					return nil
				})
				require.NoError(t, err)
				require.Equal(t, alone[i].Logprobs, streamed, "streamed with the tokens")
			}
			worst := 0.0
			for i, res := range alone {
				if !reqs[i].Logprobs {
					require.Nil(t, res.Logprobs)
					continue
				}
				require.Len(t, res.Logprobs, len(res.OutputIDs))
				for pos, lp := range res.Logprobs {
					ref := refLogSoftmax(t, e, slices.Concat(res.PromptIDs, res.OutputIDs[:pos]))
					worst = max(worst, math.Abs(lp.Logprob-ref[res.OutputIDs[pos]]))
					require.InDelta(t, ref[res.OutputIDs[pos]], lp.Logprob, 1e-5, "request %d token %d", i, pos)
					order := make([]int32, len(ref))
					for id := range order {
						order[id] = int32(id)
					}
					slices.SortStableFunc(order, func(a, b int32) int {
						switch {
						case ref[a] > ref[b]:
							return -1
						case ref[a] < ref[b]:
							return 1
						}
						return 0
					})
					require.Len(t, lp.Top, reqs[i].TopLogprobs)
					for j, top := range lp.Top {
						require.Equal(t, order[j], top.ID, "request %d token %d: top %d", i, pos, j)
						require.InDelta(t, ref[top.ID], top.Logprob, 1e-5)
					}
					if reqs[i].Sampling.Greedy() && !reqs[i].Sampling.adjusts() && len(lp.Top) > 0 {
						require.Equal(t, res.OutputIDs[pos], lp.Top[0].ID, "greedy picks the top")
					}
				}
			}
			t.Logf("%s tp=%d: max |logprob − f64 reference| %.3g", model, tp, worst)

			var mu sync.Mutex
			streamed := make([][]TokenLogprobs, len(reqs))
			batched, err := e.GenerateBatch(context.Background(), reqs, func(i int, tok Token) error {
				mu.Lock()
				defer mu.Unlock()
				if tok.Logprobs != nil {
					streamed[i] = append(streamed[i], *tok.Logprobs)
				}
				return nil
			})
			require.NoError(t, err)
			for i := range reqs {
				require.Equal(t, alone[i].OutputIDs, batched[i].OutputIDs)
				require.Equal(t, alone[i].Logprobs, batched[i].Logprobs, "request %d: batch-invariant logprobs", i)
			}
		})
	}
}

// TestLogprobsGatherNoFullLogits: a greedy request's logprobs come from the candidates and
// the shards' log-sum-exp terms, and a sampled request's token from the ranks' Gumbel-max
// winners, top-k or top-p candidates, so their steps gather no row of full logits
// (counted where the ranks gather them), penalties and bias included; only a request
// that wants logprobs of adjusted logits gathers one per token. (Before TP-wise sampling,
// every sampled request gathered one per token: issue 28 asked for this change.)
// Logprobs through the full logits would give the same numbers, so only the count tells.
func TestLogprobsGatherNoFullLogits(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 2, NoPrefixCaching: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	llama, ok := e.Model().(*models.Llama)
	require.True(t, ok)
	sampled := Sampling{Temperature: 1, Seed: 3}
	for _, tc := range []struct {
		name string
		req  Request
		rows int64 // full-logit rows gathered
	}{
		{"greedy", Request{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true}, 0},
		{"greedy with logprobs", Request{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true, Logprobs: true, TopLogprobs: 5}, 0},
		{"greedy with the most top logprobs", Request{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true, Logprobs: true, TopLogprobs: MaxTopLogprobs}, 0},
		{"sampled", Request{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true, Sampling: sampled}, 0},
		{"sampled with logprobs", Request{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true, Sampling: sampled, Logprobs: true, TopLogprobs: 5}, 0},
		{"top-k", Request{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true, Sampling: Sampling{Temperature: 1, TopK: 40, Seed: 3}}, 0},
		{"top-p", Request{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true, Sampling: Sampling{Temperature: 1, TopP: 0.9, Seed: 3}}, 0},
		{"penalized", Request{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true, Sampling: Sampling{Temperature: 1, Seed: 3,
			FrequencyPenalty: 1, LogitBias: map[int32]float32{9: 5}}}, 0},
		{"penalized with logprobs", Request{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true, Logprobs: true, Sampling: Sampling{Temperature: 1, Seed: 3,
			FrequencyPenalty: 1}}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := llama.FullLogitRows()
			res, err := e.Generate(context.Background(), tc.req, func(Token) error { return nil })
			require.NoError(t, err)
			if tc.req.Logprobs {
				require.Len(t, res.Logprobs, tc.req.MaxTokens)
			}
			require.Equal(t, tc.rows, llama.FullLogitRows()-before, "rows of full logits gathered")
		})
	}
}
