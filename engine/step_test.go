package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeGraphOnlyForDecodeSteps: a step of one sampled token per sequence replays the
// graph of the smallest bucket holding it; a step with a prompt chunk, or a token whose
// logits are not wanted, runs eagerly.
func TestDecodeGraphOnlyForDecodeSteps(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 1, MaxRunning: 4})
	require.NoError(t, err)
	defer e.Close()
	seq := func(ids, pos int) *sequence { return &sequence{ids: make([]int32, ids), pos: pos} }
	decodes := []chunk{{seq(5, 4), 1}, {seq(9, 8), 1}, {seq(3, 2), 1}}
	g := e.decodeGraph(decodes, 1, false)
	require.NotNil(t, g)
	require.Equal(t, 4, g.Batch)
	require.Same(t, e.decodeGraphs[4][0], e.decodeGraph(decodes, 0, false), "the full logits' graph")
	require.Nil(t, e.decodeGraph(append(decodes, chunk{seq(20, 0), 7}), 1, false), "a prompt chunk beside the decodes")
	require.Nil(t, e.decodeGraph([]chunk{{seq(20, 10), 1}}, 1, false), "one prompt token, not the last")
	require.Nil(t, e.decodeGraph(decodes, 1, true), "logprobs run eagerly")
	require.Nil(t, e.decodeGraph(decodes, 5, false), "top candidates for logprobs run eagerly")

	eager, err := New(Config{Model: "tiny", TP: 1, MaxRunning: 4, Eager: true})
	require.NoError(t, err)
	defer eager.Close()
	require.Nil(t, eager.decodeGraph(decodes, 1, false))
}

// TestDecodeStepsReplayTheirBucketsGraph: a served decode step replays the captured graph
// of its batch bucket (counted by the graph itself), greedy or sampled, alone or batched;
// a prefill step and a step with logprobs run eagerly and replay nothing. The tokens are
// the same either way, so only the counts tell the graphs serve.
func TestDecodeStepsReplayTheirBucketsGraph(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 2, MaxRunning: 4, NoPrefixCaching: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.Equal(t, []int{1, 2, 4}, e.Graphs().Buckets)
	sampled := Sampling{Temperature: 1, Seed: 5}
	for _, tc := range []struct {
		name string
		reqs []Request
		want map[int]int64 // replays added per bucket
	}{
		{"prefill only", []Request{{Prompt: "a b", MaxTokens: 1}}, map[int]int64{}},
		{"greedy decode", []Request{{Prompt: "a b", MaxTokens: 5, IgnoreEOS: true}}, map[int]int64{1: 4}},
		{"sampled decode", []Request{{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true, Sampling: sampled}}, map[int]int64{1: 3}},
		{"three in the bucket of four", []Request{
			{Prompt: "a", MaxTokens: 4, IgnoreEOS: true},
			{Prompt: "b c", MaxTokens: 4, IgnoreEOS: true},
			{Prompt: "d e f", MaxTokens: 4, IgnoreEOS: true, Sampling: sampled},
		}, map[int]int64{4: 3}},
		{"logprobs run eagerly", []Request{{Prompt: "a b", MaxTokens: 4, IgnoreEOS: true, Logprobs: true}}, map[int]int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.DecodeGraphReplays()
			_, err := e.GenerateBatch(context.Background(), tc.reqs, func(int, Token) error { return nil })
			require.NoError(t, err)
			added := map[int]int64{}
			for bucket, n := range e.DecodeGraphReplays() {
				if d := n - before[bucket]; d != 0 {
					added[bucket] = d
				}
			}
			require.Equal(t, tc.want, added, "decode graph replays per bucket")
		})
	}
}
