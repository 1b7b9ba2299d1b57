package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const tinyGGUF = "../../shared/testdata/llamacpp-tiny/tiny-f32.gguf"

var tinyGreedy = []int32{454, 477, 477, 477, 477, 477, 477, 477, 477, 477, 477, 477, 477, 477, 454, 477}

func tinyEngine(t *testing.T, tp int) *Engine {
	t.Helper()
	if _, err := os.Stat(tinyGGUF); err != nil {
		t.Skipf("shared test data not available (%v); it lives in ../shared next to the repository", err)
	}
	e, err := New(Config{Model: filepath.Clean(tinyGGUF), TP: tp, MaxBatchTokens: 8, MaxRunning: 4})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// TestGenerateGreedyMatchesLlamaCpp runs the whole path — tokenizer, chunked prefill,
// decode, distributed greedy choice, streaming — on the llama.cpp oracle.
func TestGenerateGreedyMatchesLlamaCpp(t *testing.T) {
	for _, tp := range []int{1, 8} {
		e := tinyEngine(t, tp)
		var streamed strings.Builder
		res, err := e.Generate(context.Background(), Request{Prompt: "Hello my name is", MaxTokens: 16}, func(tok Token) error {
			streamed.WriteString(tok.Text)
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, []int32{1, 259, 299, 328, 424, 338, 366, 348, 367, 324, 412, 362, 342}, res.PromptIDs)
		require.Equal(t, tinyGreedy, res.OutputIDs, "tp=%d", tp)
		require.Equal(t, FinishLength, res.FinishReason)
		require.Equal(t, res.Text, streamed.String())
		require.Positive(t, res.TTFT)
		require.Positive(t, res.DecodeTokensPerSec)
		require.Contains(t, res.Allreduce, "decode/attn.o_proj")
		require.Zero(t, e.Blocks().InUse(), "blocks are freed")
	}
}

func TestGenerateStopsAndLimits(t *testing.T) {
	e := tinyEngine(t, 2)
	ctx := context.Background()
	full, err := e.Generate(ctx, Request{Prompt: "Hello my name is", MaxTokens: 16}, func(Token) error { return nil })
	require.NoError(t, err)
	require.Greater(t, len(full.Text), 4)

	stop := full.Text[2:4]
	res, err := e.Generate(ctx, Request{Prompt: "Hello my name is", MaxTokens: 16, Stop: []string{stop}}, func(Token) error { return nil })
	require.NoError(t, err)
	require.Equal(t, FinishStop, res.FinishReason)
	require.Equal(t, full.Text[:strings.Index(full.Text, stop)], res.Text)

	res, err = e.Generate(ctx, Request{Prompt: "Hello my name is", MaxTokens: 3}, func(Token) error { return nil })
	require.NoError(t, err)
	require.Equal(t, tinyGreedy[:3], res.OutputIDs)

	long := make([]int32, e.Model().Config().ContextLength)
	_, err = e.Generate(ctx, Request{PromptIDs: long}, func(Token) error { return nil })
	require.ErrorContains(t, err, "the context holds")
	_, err = e.Generate(ctx, Request{PromptIDs: []int32{1, 9999}}, func(Token) error { return nil })
	require.ErrorContains(t, err, "prompt token 1 is id 9999, outside the vocabulary of 512")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = e.Generate(cancelled, Request{Prompt: "Hello"}, func(Token) error { return nil })
	require.ErrorIs(t, err, context.Canceled)

	boom := errors.New("client went away")
	_, err = e.Generate(ctx, Request{Prompt: "Hello", MaxTokens: 5}, func(Token) error { return boom })
	require.ErrorIs(t, err, boom)
	require.Zero(t, e.Blocks().InUse())

	_, err = e.Generate(ctx, Request{Prompt: "Hello", Sampling: Sampling{TopP: 2}}, func(Token) error { return nil })
	require.ErrorContains(t, err, "top_p must be in [0, 1]")
}

// TestGenerateSampling: seeded sampling repeats, and differs across seeds; top-k goes
// through the distributed candidates, top-p alone through the gathered logits.
func TestGenerateSampling(t *testing.T) {
	e := tinyEngine(t, 4)
	run := func(s Sampling) []int32 {
		res, err := e.Generate(context.Background(), Request{Prompt: "Hello my name is", MaxTokens: 12, Sampling: s}, func(Token) error { return nil })
		require.NoError(t, err)
		return res.OutputIDs
	}
	for _, s := range []Sampling{{Temperature: 1.5, TopK: 20, Seed: 1}, {Temperature: 1.5, TopP: 0.95, Seed: 1}} {
		a, b := run(s), run(s)
		require.Equal(t, a, b, "same seed, same tokens (%+v)", s)
		s.Seed = 2
		require.NotEqual(t, a, run(s), "another seed, other tokens (%+v)", s)
	}
}

// TestGraphsMatchEager: decode graphs give the same tokens as eager steps, for greedy and
// sampled requests (top-k goes through the full logits under graphs, the candidates
// eagerly: the same choice either way).
func TestGraphsMatchEager(t *testing.T) {
	for _, model := range []string{"tiny", tinyGGUF} {
		if model == tinyGGUF {
			if _, err := os.Stat(tinyGGUF); err != nil {
				continue
			}
		}
		outputs := map[bool][][]int32{}
		for _, eager := range []bool{true, false} {
			e, err := New(Config{Model: model, TP: 2, Eager: eager})
			require.NoError(t, err)
			if !eager {
				require.Equal(t, []int{1, 2, 4, 8, 16, 32, 64}, e.Graphs().Buckets)
				require.Positive(t, e.Graphs().Nodes)
			}
			for _, s := range []Sampling{{}, {Temperature: 0.9, TopK: 5, Seed: 4}, {Temperature: 1.1, TopP: 0.8, Seed: 5}} {
				res, err := e.Generate(context.Background(), Request{Prompt: "Hello my name is", MaxTokens: 12, Sampling: s}, func(Token) error { return nil })
				require.NoError(t, err)
				outputs[eager] = append(outputs[eager], res.OutputIDs)
			}
			require.NoError(t, e.Close())
		}
		require.Equal(t, outputs[true], outputs[false], "model %s", model)
	}
}

// TestNewRefusesVocabOnlyGGUF: a GGUF file that parses but holds no weights (a vocab-only
// file) is an error naming the missing tensor, and the source opened for it is closed.
func TestNewRefusesVocabOnlyGGUF(t *testing.T) {
	vocab := "../../shared/testdata/tokenizer/ggml-vocab-llama-spm.gguf"
	if _, err := os.Stat(vocab); err != nil {
		t.Skipf("shared test data not available (%v); it lives in ../shared next to the repository", err)
	}
	_, err := New(Config{Model: vocab, TP: 1})
	require.ErrorContains(t, err, "tensor token_embd.weight [32000 4096] missing")
}
