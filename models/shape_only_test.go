package models

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/layers"
)

// TestShapeOnlyCapturesTheSameGraph: a shape-only model captures exactly the decode graph
// of a model with weights — the same kernels, grids, costs and dependencies — so a
// performance model that prices it prices what the engine replays. It weighs the same and
// refuses to run.
func TestShapeOnlyCapturesTheSameGraph(t *testing.T) {
	cfg, err := Preset("tiny")
	require.NoError(t, err)
	src, err := NewDummy(cfg, 7)
	require.NoError(t, err)
	for _, world := range []int{1, 2, 8} {
		for _, batch := range []int{1, 4} {
			t.Run(fmt.Sprintf("tp=%d/batch=%d", world, batch), func(t *testing.T) {
				opt := LlamaOptions{MaxTokens: 8, MaxSeqs: 4, WeightDType: dtype.BF16}
				real := newTestLlama(t, world, cfg, src, opt)
				opt.ShapeOnly, opt.KVBlocks = true, 1
				shape := newTestLlama(t, world, cfg, src, opt)
				require.Equal(t, real.WeightBytes(), shape.WeightBytes())

				want, err := real.CaptureDecode(batch, 1)
				require.NoError(t, err)
				got, err := shape.CaptureDecode(batch, 1)
				require.NoError(t, err)
				for r := range world {
					requireSameSchedule(t, want.Graph(r), got.Graph(r))
				}

				st := Step{IDs: []int32{1}, Sample: []int{0}, Candidates: 1,
					Batch: layers.Batch{Pos: []int32{0}, Tables: [][]int32{{0}}}}
				require.ErrorContains(t, shape.Forward(st), "shape-only")
				require.ErrorContains(t, got.Replay(), "shape-only")
			})
		}
	}
}

func requireSameSchedule(t *testing.T, want, got *device.Graph) {
	t.Helper()
	require.Len(t, got.Nodes, len(want.Nodes))
	for i, w := range want.Nodes {
		g := got.Nodes[i]
		require.Equal(t, w.Kernel.Name, g.Kernel.Name, "node %d", i)
		require.Equal(t, w.Kernel.Grid, g.Kernel.Grid, "node %d (%s)", i, w.Kernel.Name)
		require.Equal(t, w.Kernel.Work, g.Kernel.Work, "node %d (%s)", i, w.Kernel.Name)
		require.Equal(t, w.Deps, g.Deps, "node %d (%s)", i, w.Kernel.Name)
		require.NotEmpty(t, w.Kernel.Work.Class, "node %d (%s) declares no work", i, w.Kernel.Name)
	}
}
