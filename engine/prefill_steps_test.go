package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrefillStepsSpreadPrompts: while sequences decode, a step's prompt chunks hold a
// quarter (PrefillSteps 4) of the prefill tokens pending, at least its decode tokens or a
// block, and no more than the largest such share since the backlog began (the budget
// too); with nothing decoding, a prompt
// takes all the budget. Under two newcomers every other step, each step's prefill settles
// at one prompt's tokens (not two prompts, then none), no newcomer waits more than a few steps for its first token, every
// decoding sequence gets its token at every step, and the backlog drains once arrivals
// stop.
func TestPrefillStepsSpreadPrompts(t *testing.T) {
	const prompt, steps, budget = 70, 4, 256
	e := &Engine{cfg: Config{MaxBatchTokens: budget, MaxRunning: 64, PrefillSteps: steps, NoPrefixCaching: true},
		blocks: NewBlockPool(1024)}
	newcomer := func() *sequence { return &sequence{ctx: context.Background(), ids: longPrompt(prompt)} }
	forward := func(chunks []chunk) { // the step's tokens enter the cache; a sampled sequence gets a token
		for _, c := range chunks {
			if c.s.pos += c.n; c.s.pos == len(c.s.ids) {
				c.s.ids = append(c.s.ids, 7)
			}
		}
	}

	first := newcomer()
	e.sched.waiting = []*sequence{first}
	running, chunks := e.schedule(nil)
	require.Equal(t, []chunk{{first, prompt}}, chunks, "nothing decodes: no bound")
	forward(chunks)

	arrived, firstToken := map[*sequence]int{}, map[*sequence]int{}
	paced := 0 // the largest bound since the backlog began
	for step := 0; step < 40 && len(firstToken) < 1+16; step++ {
		for i := 0; step < 16 && step%2 == 0 && i < 2; i++ { // two every other step, then none
			s := newcomer()
			arrived[s] = step
			e.sched.waiting = append(e.sched.waiting, s)
		}
		pending, decoding := 0, 0
		for _, s := range running {
			if left := len(s.ids) - s.pos; left > 1 {
				pending += left
			} else {
				decoding++
			}
		}
		for _, s := range e.sched.waiting {
			pending += len(s.ids)
		}
		running, chunks = e.schedule(running)
		prefill := 0
		for _, c := range chunks {
			if c.s.pos == len(c.s.ids)-1 {
				require.Equal(t, 1, c.n)
			} else {
				prefill += c.n
			}
		}
		require.Equal(t, len(running), len(chunks), "step %d: every running sequence has a chunk", step)
		bound := max((pending+steps-1)/steps, decoding, BlockSize)
		paced = max(paced, bound)
		require.GreaterOrEqual(t, prefill, min(pending, bound, budget-decoding), "step %d: %d pending, %d decoding", step, pending, decoding)
		require.LessOrEqual(t, prefill, min(pending, paced, budget-decoding), "step %d: %d pending, %d decoding: above the backlog's pace", step, pending, decoding)
		if prefill == pending {
			paced = 0 // the backlog is taken: the next one sets its own pace
		}
		if step >= 8 && step < 16 {
			require.InDelta(t, prompt, prefill, prompt/4, "step %d: the prefill follows the arrivals", step)
		}
		forward(chunks)
		for _, c := range chunks {
			if _, ok := firstToken[c.s]; !ok && c.last() {
				firstToken[c.s] = step
			}
		}
	}
	require.Len(t, firstToken, 1+16, "every newcomer got its first token")
	for s, at := range arrived {
		require.LessOrEqual(t, firstToken[s]-at, 3*steps, "the newcomer of step %d waited too long", at)
	}
}

// TestPrefillStepsTakeABurstInSteps: a burst of 32 prompts arriving while 8 sequences
// decode is prefilled in PrefillSteps steps (a quarter of the burst each), not a quarter
// of what is left at every step, which leaves a third of the burst after four steps and
// lets its last prompts in one a step; the decoding sequences get a token at every step
// meanwhile; and a newcomer after the burst is paced by itself again.
func TestPrefillStepsTakeABurstInSteps(t *testing.T) {
	const prompt, steps, burst, decoding = 70, 4, 32, 8
	e := &Engine{cfg: Config{MaxBatchTokens: 4096, MaxRunning: 64, PrefillSteps: steps, NoPrefixCaching: true},
		blocks: NewBlockPool(1024)}
	var running []*sequence
	for range decoding {
		s := &sequence{ctx: context.Background(), ids: longPrompt(prompt + 1)}
		s.pos = prompt // its prompt is in the cache: it decodes
		require.NoError(t, e.reserve(s, s.pos))
		running = append(running, s)
	}
	decoders := slices.Clone(running)
	for range burst {
		e.sched.waiting = append(e.sched.waiting, &sequence{ctx: context.Background(), ids: longPrompt(prompt)})
	}
	var chunks []chunk
	for step := range steps {
		running, chunks = e.schedule(running)
		prefill := 0
		for _, c := range chunks {
			if c.s.pos+c.n == len(c.s.ids) && c.n == 1 {
				continue
			}
			prefill += c.n
		}
		require.Equal(t, burst*prompt/steps, prefill, "step %d takes a quarter of the burst", step)
		for _, s := range decoders {
			require.True(t, slices.ContainsFunc(chunks, func(c chunk) bool { return c.s == s }), "step %d: a decoding sequence waits", step)
		}
		for _, c := range chunks {
			if c.s.pos += c.n; c.s.pos == len(c.s.ids) {
				c.s.ids = append(c.s.ids, 7)
			}
		}
	}
	require.Empty(t, e.sched.waiting, "the whole burst is admitted")
	for _, s := range running {
		require.Equal(t, len(s.ids)-1, s.pos, "every prompt is prefilled: all decode together")
	}

	// The burst is taken: a lone newcomer sets its own pace, bounded by the decode rows.
	late := &sequence{ctx: context.Background(), ids: longPrompt(prompt)}
	e.sched.waiting = append(e.sched.waiting, late)
	running, chunks = e.schedule(running)
	require.Len(t, running, decoding+burst+1)
	require.Equal(t, chunk{late, decoding + burst}, chunks[len(chunks)-1], "the newcomer's chunk is as many tokens as the step decodes, not the burst's pace")
}

func TestPrefillStepsMustNotBeNegative(t *testing.T) {
	_, err := New(Config{Model: "tiny", PrefillSteps: -1})
	require.ErrorContains(t, err, "engine: prefill steps must be ≥ 0, got -1")
}
