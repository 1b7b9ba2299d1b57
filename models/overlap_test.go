package models

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/tp"
)

// TestOverlapMatchesSerial: the two-batch overlapped schedule (all-reduces on the comm
// stream) gives bitwise the logits of the serial one, eagerly and replayed from a graph,
// for decode batches and for a prefill that splits one sequence. Equal results cannot tell
// the two schedules apart: TestOverlapRunsAllReducesBesideCompute checks the streams.
func TestOverlapMatchesSerial(t *testing.T) {
	cfg, err := Preset("tiny")
	require.NoError(t, err)
	src, err := NewDummy(cfg, 11)
	require.NoError(t, err)
	perSeq := (cfg.ContextLength + 15) / 16
	opt := LlamaOptions{MaxTokens: 64, MaxSeqs: 16, KVBlocks: 16 * perSeq}
	for _, world := range []int{1, 2, 8} {
		serial := newTestLlama(t, world, cfg, src, opt)
		g, err := tp.NewGroup(tp.GroupConfig{World: world, SMs: 3, CommSMs: 1})
		require.NoError(t, err)
		t.Cleanup(func() { _ = g.Close() })
		o := opt
		o.Overlap = true
		over, err := NewLlama(g, cfg, src, o)
		require.NoError(t, err)
		t.Cleanup(over.Close)

		tables := make([][]int32, 16)
		for s := range tables {
			tables[s] = make([]int32, perSeq)
			for i := range tables[s] {
				tables[s][i] = int32(s*perSeq + i)
			}
		}
		// A prefill of one sequence of 9 tokens: the micro-batches split it.
		prefill := Step{Candidates: 0, Batch: layers.Batch{Tables: tables[:1]}}
		for p := range 9 {
			prefill.IDs = append(prefill.IDs, int32(5+p))
			prefill.Batch.Pos = append(prefill.Batch.Pos, int32(p))
			prefill.Batch.Seq = append(prefill.Batch.Seq, 0)
		}
		prefill.Sample = []int{8}
		require.NoError(t, serial.Forward(prefill))
		want := serial.Logits(prefill)
		require.NoError(t, over.Forward(prefill))
		require.Equal(t, want, over.Logits(prefill), "tp=%d prefill", world)

		for _, b := range []int{2, 5, 16} {
			t.Run(fmt.Sprintf("tp=%d/batch=%d", world, b), func(t *testing.T) {
				st := Step{Candidates: 0, Batch: layers.Batch{Tables: tables[:b]}}
				for s := range b {
					st.IDs = append(st.IDs, int32(20+s))
					st.Batch.Pos = append(st.Batch.Pos, int32(3+s%4))
					st.Batch.Seq = append(st.Batch.Seq, int32(s))
					st.Sample = append(st.Sample, s)
				}
				require.NoError(t, serial.Forward(st))
				want := serial.Logits(st)
				require.NoError(t, over.Forward(st))
				require.Equal(t, want, over.Logits(st), "eager")

				graph, err := over.CaptureDecode(b, 0)
				require.NoError(t, err)
				copy(graph.Step.IDs, st.IDs)
				copy(graph.Step.Batch.Pos, st.Batch.Pos)
				for s := range b {
					copy(graph.Step.Batch.Tables[s], tables[s])
				}
				require.NoError(t, graph.Replay())
				require.Equal(t, want, over.Logits(graph.Step), "graph replay")
			})
		}
	}
}
