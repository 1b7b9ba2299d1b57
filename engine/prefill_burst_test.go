package engine

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// burstStep schedules one step with the test's forward pass (the step's tokens enter the
// cache; a sequence that reached its last token gets one more) and returns the running
// batch, the prefill tokens the step took, the sequences that decoded in it, and the
// prefill tokens and sequences pending before it.
func burstStep(e *Engine, running []*sequence) (next []*sequence, prefill, decoding, pending, prefilling int) {
	for _, s := range running {
		if left := len(s.ids) - s.pos; left > 1 {
			pending, prefilling = pending+left, prefilling+1
		} else {
			decoding++
		}
	}
	for _, s := range e.sched.waiting {
		pending, prefilling = pending+len(s.ids)-s.pos, prefilling+1
	}
	next, chunks := e.schedule(running)
	for _, c := range chunks {
		if c.n != 1 || !c.last() {
			prefill += c.n
		}
		if c.s.pos += c.n; c.s.pos == len(c.s.ids) {
			c.s.ids = append(c.s.ids, 7)
		}
	}
	return next, prefill, decoding, pending, prefilling
}

// decodingSequences are n running sequences whose prompts are in the cache.
func decodingSequences(t *testing.T, e *Engine, n int) []*sequence {
	var running []*sequence
	for range n {
		s := &sequence{ctx: context.Background(), ids: longPrompt(71)}
		s.pos = 70
		require.NoError(t, e.reserve(s, s.pos))
		running = append(running, s)
	}
	return running
}

// TestPrefillBurstTakesTheBudget: with PrefillBurstRatio 1, 32 prompts arriving where 8
// sequences decode (or none) are a burst: every step gives its prompts all the budget its
// decode tokens leave, also once the burst's first prompts decode and outnumber those
// still waiting, so the burst is prefilled in the fewest steps the budget allows (5, where
// PrefillSteps alone takes 8). Then a lone newcomer is paced again.
func TestPrefillBurstTakesTheBudget(t *testing.T) {
	const prompt, burst, budget, steps = 70, 32, 512, 8
	for _, decoders := range []int{8, 0} {
		t.Run(fmt.Sprintf("decoding=%d", decoders), func(t *testing.T) {
			e := &Engine{cfg: Config{MaxBatchTokens: budget, MaxRunning: 64, PrefillSteps: steps, PrefillBurstRatio: 1, NoPrefixCaching: true},
				blocks: NewBlockPool(1024)}
			running := decodingSequences(t, e, decoders)
			for range burst {
				e.sched.waiting = append(e.sched.waiting, &sequence{ctx: context.Background(), ids: longPrompt(prompt)})
			}
			taken, outnumbered := 0, false
			for step := 0; ; step++ {
				require.Less(t, step, 5, "the burst takes more steps than its tokens over the budget")
				var prefill, decoding, pending, prefilling int
				running, prefill, decoding, pending, prefilling = burstStep(e, running)
				require.Equal(t, min(pending, budget-decoding), prefill, "step %d: %d decoding, %d prefilling: the burst's prompts take all the budget leaves", step, decoding, prefilling)
				outnumbered = outnumbered || prefilling < decoding
				if taken += prefill; taken == burst*prompt {
					break
				}
			}
			require.True(t, outnumbered, "the burst kept the budget after its decoding sequences outnumbered its prompts")
			require.Empty(t, e.sched.waiting)

			e.sched.waiting = []*sequence{{ctx: context.Background(), ids: longPrompt(prompt)}}
			_, prefill, decoding, _, _ := burstStep(e, running)
			require.Equal(t, decoding, prefill, "after the burst a lone newcomer takes as many tokens as the step decodes (its pace), not %d", prefill)
		})
	}
}

// TestPrefillBurstRatioPacesAFew: newcomers fewer than PrefillBurstRatio times the
// sequences decoding are no burst: their prompts are paced by PrefillSteps as without
// the ratio, and a ratio of 0 never lifts the pace.
func TestPrefillBurstRatioPacesAFew(t *testing.T) {
	const prompt, budget, steps = 70, 512, 4
	for _, tc := range []struct {
		ratio               float64
		decoders, newcomers int
		paced               bool
	}{
		{ratio: 1, decoders: 32, newcomers: 4, paced: true},
		{ratio: 1, decoders: 32, newcomers: 31, paced: true},
		{ratio: 1, decoders: 32, newcomers: 32, paced: false},
		{ratio: 0.25, decoders: 32, newcomers: 8, paced: false},
		{ratio: 0, decoders: 8, newcomers: 32, paced: true},
	} {
		t.Run(fmt.Sprintf("ratio=%g/decoding=%d/newcomers=%d", tc.ratio, tc.decoders, tc.newcomers), func(t *testing.T) {
			e := &Engine{cfg: Config{MaxBatchTokens: budget, MaxRunning: 64, PrefillSteps: steps, PrefillBurstRatio: tc.ratio, NoPrefixCaching: true},
				blocks: NewBlockPool(1024)}
			running := decodingSequences(t, e, tc.decoders)
			for range tc.newcomers {
				e.sched.waiting = append(e.sched.waiting, &sequence{ctx: context.Background(), ids: longPrompt(prompt)})
			}
			_, prefill, _, pending, _ := burstStep(e, running)
			want := min(pending, budget-tc.decoders)
			if tc.paced {
				want = min(want, max((pending+steps-1)/steps, tc.decoders, BlockSize))
			}
			require.Equal(t, want, prefill)
		})
	}
}

func TestPrefillBurstRatioMustBeANumber(t *testing.T) {
	for _, r := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := New(Config{Model: "tiny", PrefillBurstRatio: r})
		require.ErrorContains(t, err, "engine: prefill burst ratio must be a number ≥ 0, got")
	}
}
