package engine

import (
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
