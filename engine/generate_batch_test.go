package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// forwardCounter counts rank 0's forward passes: every one starts with the embedding.
type forwardCounter struct {
	dev   *device.Device
	steps atomic.Int64
}

func (c *forwardCounter) KernelDone(s device.KernelSpan) {
	if s.Stream.Device() == c.dev && s.Kernel.Work.Class == device.ClassEmbedding {
		c.steps.Add(1)
	}
}

// TestGenerateBatchAdmitsTogether: a batch enters the queue at once, so its requests are
// admitted at one step boundary and decode as one batch: one step prefills all of them,
// then one decode step per further token for all of them together. The tokens equal each
// request's alone.
func TestGenerateBatchAdmitsTogether(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 2, MaxRunning: 8})
	require.NoError(t, err)
	defer e.Close()
	const n, tokens = 6, 9
	var reqs []Request
	var alone [][]int32
	for i := range n {
		r := Request{PromptIDs: []int32{int32(3 + i), int32(40 + 7*i), 11}, MaxTokens: tokens}
		res, err := e.Generate(context.Background(), r, func(Token) error { return nil })
		require.NoError(t, err)
		require.Len(t, res.OutputIDs, tokens, "request %d must not stop early for this test", i)
		reqs, alone = append(reqs, r), append(alone, res.OutputIDs)
	}

	counter := &forwardCounter{dev: e.Model().Group().Device(0)}
	e.Model().Group().Node().SetTracer(counter)
	var emitted [n]atomic.Int64
	results, err := e.GenerateBatch(context.Background(), reqs, func(i int, tok Token) error {
		if tok.ID >= 0 {
			emitted[i].Add(1)
		}
		return nil
	})
	e.Model().Group().Node().SetTracer(nil)
	require.NoError(t, err)
	for i, res := range results {
		require.Equal(t, alone[i], res.OutputIDs, "request %d", i)
		require.EqualValues(t, tokens, emitted[i].Load(), "request %d", i)
	}
	require.EqualValues(t, tokens, counter.steps.Load(), "one step of %d prompts, then %d decode steps of the whole batch", n, tokens-1)
	require.Zero(t, e.Blocks().InUse())
}

func TestGenerateBatchRefusals(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 1, MaxRunning: 2, MaxWaiting: 2})
	require.NoError(t, err)
	defer e.Close()
	ok := Request{Prompt: "hello", MaxTokens: 2}

	_, err = e.GenerateBatch(context.Background(), []Request{ok, ok, {Prompt: "x", MaxTokens: -1}}, nil)
	require.ErrorContains(t, err, "request 2: engine: max_tokens must be ≥ 0")

	_, err = e.GenerateBatch(context.Background(), []Request{ok, ok, ok}, func(int, Token) error { return nil })
	require.ErrorIs(t, err, ErrQueueFull, "three requests never fit a queue of two")

	stop := errors.New("enough")
	results, err := e.GenerateBatch(context.Background(), []Request{ok, ok}, func(i int, _ Token) error {
		if i == 1 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.ErrorContains(t, err, "request 1: ")
	require.Len(t, results[0].OutputIDs, 2, "the other request runs to its end")
	require.Zero(t, e.Blocks().InUse())
}
