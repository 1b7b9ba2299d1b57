package engine

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdjust: bias, the min_tokens mask and the penalties, as the ranks apply them
// (rowSampler's list), change exactly the tokens they name, as vLLM computes them.
func TestAdjust(t *testing.T) {
	e := &Engine{endOfGeneration: map[int32]bool{2: true}}
	s := &sequence{
		req: Request{StopTokenIDs: []int32{5}, Sampling: Sampling{LogitBias: map[int32]float32{0: 1.5, 4: -100}, MinTokens: 2,
			RepetitionPenalty: 2, FrequencyPenalty: 0.5, PresencePenalty: 0.25}},
		counts: map[int32]int32{1: 3}, seen: map[int32]bool{1: true, 3: true},
	}
	s.result.OutputIDs = []int32{1, 1, 1}
	adjust := func(logits []float32) { r := e.rowSampler(s); r.Apply(logits, 0) }
	logits := []float32{1, 4, 0.5, -1, 2, 3, 7}
	adjust(logits)
	require.Equal(t, []float32{2.5, 4.0/2 - 3*0.5 - 0.25, 0.5, -2, -98, 3, 7}, logits, "3 tokens out: min_tokens 2 reached")

	s.result.OutputIDs = s.result.OutputIDs[:1]
	logits = []float32{1, 4, 0.5, -1, 2, 3, 7}
	adjust(logits)
	inf := float32(math.Inf(-1))
	require.Equal(t, inf, logits[2], "EOS masked before min_tokens")
	require.Equal(t, inf, logits[5], "stop token masked before min_tokens")
	require.Equal(t, float32(7), logits[6])
}

func TestSamplingValidatePenalties(t *testing.T) {
	for _, tc := range []struct {
		s    Sampling
		want string
	}{
		{Sampling{PresencePenalty: 2.5}, "presence_penalty must be in [-2, 2]"},
		{Sampling{FrequencyPenalty: -3}, "frequency_penalty must be in [-2, 2]"},
		{Sampling{RepetitionPenalty: -1}, "repetition_penalty must be > 0"},
		{Sampling{MinTokens: -1}, "min_tokens must be ≥ 0"},
		{Sampling{LogitBias: map[int32]float32{3: 101}}, "logit_bias of token 3 must be in [-100, 100]"},
	} {
		require.ErrorContains(t, tc.s.Validate(), tc.want)
	}
	require.NoError(t, Sampling{PresencePenalty: -2, FrequencyPenalty: 2, RepetitionPenalty: 1.2, LogitBias: map[int32]float32{1: -100}}.Validate())
}

// TestGeneratePenaltiesAndStops runs the logit adjustments and the end-of-output options
// through real generations on the tiny preset, whose greedy output after "x" repeats a cycle of four tokens.
func TestGeneratePenaltiesAndStops(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 2})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	run := func(r Request) Result {
		t.Helper()
		if r.Prompt == "" {
			r.Prompt = "x"
		}
		if r.MaxTokens == 0 {
			r.MaxTokens = 16
		}
		res, err := e.Generate(context.Background(), r, func(Token) error { return nil })
		require.NoError(t, err)
		return res
	}
	greedy := run(Request{}).OutputIDs
	rep := greedy[len(greedy)-1]
	require.GreaterOrEqual(t, count(greedy, rep), 3, "the tiny model repeats itself")

	for _, s := range []Sampling{{RepetitionPenalty: 3}, {FrequencyPenalty: 2}, {PresencePenalty: 2},
		{LogitBias: map[int32]float32{rep: -100}}} {
		a := run(Request{Sampling: s}).OutputIDs
		require.Equal(t, a, run(Request{Sampling: s}).OutputIDs, "deterministic (%+v)", s)
		require.Less(t, count(a, rep), count(greedy, rep), "%+v repeats %d less", s, rep)
	}
	require.Equal(t, []int32{7, 7, 7}, run(Request{MaxTokens: 3, Sampling: Sampling{LogitBias: map[int32]float32{7: 100}}}).OutputIDs)
	seeded := Sampling{Temperature: 1, Seed: 3, FrequencyPenalty: 1, LogitBias: map[int32]float32{9: 5}}
	require.Equal(t, run(Request{Sampling: seeded}).OutputIDs, run(Request{Sampling: seeded}).OutputIDs)

	// The first greedy token ends the output when it is a stop token, not before min_tokens.
	first := greedy[0]
	res := run(Request{StopTokenIDs: []int32{first}})
	require.Equal(t, []int32{first}, res.OutputIDs)
	require.Equal(t, FinishStop, res.FinishReason)
	require.Empty(t, res.Text, "the stop token adds no text")
	res = run(Request{StopTokenIDs: []int32{first}, Sampling: Sampling{MinTokens: 4}})
	require.GreaterOrEqual(t, len(res.OutputIDs), 4)
	require.NotContains(t, res.OutputIDs[:4], first)

	// An EOS is generated past with IgnoreEOS, masked with MinTokens.
	e.endOfGeneration[first] = true
	defer delete(e.endOfGeneration, first)
	require.Equal(t, []int32{first}, run(Request{}).OutputIDs)
	res = run(Request{IgnoreEOS: true})
	require.Equal(t, greedy, res.OutputIDs)
	require.Equal(t, FinishLength, res.FinishReason)
	require.NotContains(t, run(Request{Sampling: Sampling{MinTokens: 3}}).OutputIDs[:3], first)

	_, err = e.Generate(context.Background(), Request{Prompt: "x", Sampling: Sampling{LogitBias: map[int32]float32{512: 1}}}, func(Token) error { return nil })
	require.ErrorContains(t, err, "logit_bias names token 512, outside the vocabulary of 512")
	_, err = e.Generate(context.Background(), Request{Prompt: "x", StopTokenIDs: []int32{-1}}, func(Token) error { return nil })
	require.ErrorContains(t, err, "stop_token_ids names token -1")
}

func count(ids []int32, id int32) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

func TestOutputIncludesStop(t *testing.T) {
	o := newOutput(pieces{"Hel", "lo", " ST", "OP more"}, compileStopStrings([]string{"STOP"}), true)
	var emitted string
	for _, id := range []int{0, 1, 2, 3} {
		text, stopped := o.add(id)
		emitted += text
		if stopped {
			break
		}
	}
	require.Equal(t, "Hello STOP", o.text())
	require.Equal(t, "Hello STOP", emitted)
}
