package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

func batchRequests() []Request {
	var reqs []Request
	for i := range 16 {
		r := Request{Prompt: fmt.Sprintf("Request %d says hello to number %d", i, i*i), MaxTokens: 4 + i%5*3}
		switch i % 4 {
		case 3: // a few sampled ones: their seeded draws must not depend on the batch
			r.Sampling = Sampling{Temperature: 0.8, TopK: 20, Seed: uint64(i)}
		case 1: // and a few with penalties and a bias, applied on their own rows
			r.Sampling = Sampling{Temperature: float32(i % 8 / 5), Seed: uint64(i), RepetitionPenalty: 1.3,
				FrequencyPenalty: 0.5, PresencePenalty: 0.4, LogitBias: map[int32]float32{477: -3, 12: 2}}
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// TestBatchedEqualsAlone: 16 requests running concurrently (continuous batching, decode
// graphs padded to their bucket) produce exactly the tokens each produces alone; also with
// weights quantized on load to Q4_0 and Q8_0, whose batches run package quant's GEMM tiles
// (eight rows and four) where one request runs its GEMV; and with bf16 weights under
// BF16Dot, whose batches run the VDPBF16PS kernel's 4-row blocks.
func TestBatchedEqualsAlone(t *testing.T) {
	for _, c := range []struct {
		eager, bf16Dot bool
		dt             dtype.DType
	}{{false, false, 0}, {true, false, 0}, {false, false, dtype.Q4_0}, {false, false, dtype.Q8_0}, {false, true, dtype.BF16}} {
		t.Run(fmt.Sprintf("eager=%v/weights=%v/bf16dot=%v", c.eager, orStored(c.dt), c.bf16Dot), func(t *testing.T) {
			e, err := New(Config{Model: "tiny", TP: 2, Eager: c.eager, WeightDType: c.dt, BF16Dot: c.bf16Dot})
			require.NoError(t, err)
			defer e.Close()
			reqs := batchRequests()
			require.Equal(t, alone(t, e, reqs), together(t, e, reqs))
			require.Zero(t, e.Blocks().InUse())
		})
	}
}

func TestCancelFreesBlocksAndQueueBound(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 2, MaxRunning: 2, MaxWaiting: 1})
	require.NoError(t, err)
	defer e.Close()

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error)
	go func() {
		var once sync.Once
		_, err := e.Generate(ctx, Request{Prompt: "long", MaxTokens: 200}, func(Token) error {
			once.Do(func() { close(started) })
			time.Sleep(time.Millisecond)
			return nil
		})
		done <- err
	}()
	<-started
	require.Positive(t, e.Blocks().InUse())
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool { return e.Blocks().InUse() == 0 }, 5*time.Second, time.Millisecond)

	// Two long requests run, one waits, the next is refused.
	demo, err := New(Config{Model: "demo", TP: 2, MaxRunning: 2, MaxWaiting: 1})
	require.NoError(t, err)
	defer demo.Close()
	long, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			_, err := demo.Generate(long, Request{Prompt: "x", MaxTokens: 1000}, func(Token) error { return nil })
			require.ErrorIs(t, err, context.Canceled)
		})
		want := min(i+1, 2)
		require.Eventually(t, func() bool { r, w := demo.Load(); return r == want && w == i+1-want }, 10*time.Second, time.Millisecond)
	}
	_, err = demo.Generate(context.Background(), Request{Prompt: "y"}, func(Token) error { return nil })
	require.True(t, errors.Is(err, ErrQueueFull), "got %v", err)
	stop()
	wg.Wait()
	require.Eventually(t, func() bool { return demo.Blocks().InUse() == 0 }, 5*time.Second, time.Millisecond)
}
