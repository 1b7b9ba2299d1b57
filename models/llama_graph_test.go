package models

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/layers"
)

// TestDecodeGraphMatchesEager: replaying the captured decode step gives bitwise the logits
// and candidates of the eager step, for several batch buckets and TP degrees, replay after
// replay with new inputs in the static buffers; with the sequence-parallel fused variant
// too, whose replays read the peers' inputs in place.
func TestDecodeGraphMatchesEager(t *testing.T) {
	cfg, err := Preset("tiny")
	require.NoError(t, err)
	src, err := NewDummy(cfg, 7)
	require.NoError(t, err)
	const prompt = 5
	perSeq := (cfg.ContextLength + 15) / 16
	for _, tc := range []struct {
		world int
		fused fused.Variant
	}{{1, fused.Auto}, {2, fused.Auto}, {8, fused.Auto}, {8, fused.SeqParallel}} {
		world := tc.world
		m := newTestLlama(t, world, cfg, src, LlamaOptions{MaxTokens: 64, MaxSeqs: 8, KVBlocks: 8 * perSeq, Fused: tc.fused})
		for _, b := range []int{1, 2, 4} {
			for _, k := range []int{0, 1} {
				t.Run(fmt.Sprintf("tp=%d/%v/batch=%d/candidates=%d", world, tc.fused, b, k), func(t *testing.T) {
					g, err := m.CaptureDecode(b, k)
					require.NoError(t, err)
					require.Positive(t, g.Nodes())
					if world > 1 {
						require.Positive(t, g.InPlace, "the blocks' collectives read in place on replay")
					}
					// b sequences, each with its own blocks, prefilled eagerly together.
					tables := make([][]int32, b)
					var pre Step
					pre.Candidates = 1
					for s := range b {
						tables[s] = make([]int32, perSeq)
						for i := range tables[s] {
							tables[s][i] = int32(s*perSeq + i)
						}
						for p := range prompt {
							pre.IDs = append(pre.IDs, int32(3+7*s+p))
							pre.Batch.Pos = append(pre.Batch.Pos, int32(p))
							pre.Batch.Seq = append(pre.Batch.Seq, int32(s))
						}
						pre.Sample = append(pre.Sample, len(pre.IDs)-1)
					}
					pre.Batch.Tables = tables
					require.NoError(t, m.Forward(pre))

					for step := range 3 {
						eager := Step{Candidates: k, Batch: layers.Batch{Tables: tables}}
						for s := range b {
							eager.IDs = append(eager.IDs, int32(10+s+step))
							eager.Batch.Pos = append(eager.Batch.Pos, int32(prompt+step))
							eager.Batch.Seq = append(eager.Batch.Seq, int32(s))
							eager.Sample = append(eager.Sample, s)
						}
						require.NoError(t, m.Forward(eager))
						wantLogits, wantCands := results(m, eager)

						copy(g.Step.IDs, eager.IDs)
						copy(g.Step.Batch.Pos, eager.Batch.Pos)
						for s := range b {
							copy(g.Step.Batch.Tables[s], tables[s])
						}
						require.NoError(t, g.Replay())
						require.EqualValues(t, step+1, g.Replays(), "replays counted")
						gotLogits, gotCands := results(m, g.Step)
						require.Equal(t, wantLogits, gotLogits, "step %d", step)
						require.Equal(t, wantCands, gotCands, "step %d", step)
					}
				})
			}
		}
	}
}

func results(m *Llama, st Step) ([][]float32, [][]layers.Candidate) {
	if st.Candidates == 0 {
		return m.Logits(st), nil
	}
	return nil, m.Candidates(st)
}
