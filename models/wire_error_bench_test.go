package models

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/models/stories260k"
	"github.com/tpslice/tpslice/tp"
)

// BenchmarkAllReduceWireError measures the low-precision wires on real all-reduce inputs:
// the partial outputs of stories260K's last down_proj, rank by rank at TP n, after the
// forward pass of run.c's 69-token story (its prompt and greedy ids). The unfused path's
// all-reduce writes another buffer, so each rank's x still holds its partial afterwards.
// Each wire's one-shot and two-shot reduce those partials; the error against the exact
// wire is reported as metrics (comm.CompareExact: maxabs, maxrel of elements of at least
// the RMS, relrms) beside rms, the exact sum's RMS. ns/op is the all-reduce's.
//
//	go test -run XXX -bench AllReduceWireError -benchtime 1x ./models/
func BenchmarkAllReduceWireError(b *testing.B) {
	src, cfg, err := Llama2CFromBytes(stories260k.Name, stories260k.Checkpoint)
	require.NoError(b, err)
	defer src.Close()
	ids := slices.Concat(stories260KPrompt, stories260KGreedy)
	for _, world := range []int{2, 4, 8} {
		partials := lastPartials(b, world, cfg, src, ids)
		count := len(partials[0])
		for _, w := range []comm.Wire{comm.WireBF16, comm.WireFP8} {
			for _, algo := range []comm.Algo{comm.OneShot, comm.TwoShot} {
				b.Run(fmt.Sprintf("tp=%d/%v/%v", world, w, algo), func(b *testing.B) {
					node, err := device.NewNode(device.NodeConfig{Devices: world, SMs: 2})
					require.NoError(b, err)
					defer node.Close()
					c, err := comm.New(node, comm.Config{Wire: w, Algo: algo})
					require.NoError(b, err)
					defer c.Close()
					ins, outs, streams := make([]*device.Buffer, world), make([]*device.Buffer, world), make([]*device.Stream, world)
					for r := range world {
						dev := c.Rank(r).Device()
						ins[r], err = dev.Alloc(dtype.F32, count)
						require.NoError(b, err)
						outs[r], err = dev.Alloc(dtype.F32, count)
						require.NoError(b, err)
						copy(ins[r].Float32s(), partials[r])
						streams[r], err = dev.NewStream("comm", 0)
						require.NoError(b, err)
					}
					for b.Loop() {
						for r := range world {
							require.NoError(b, c.Rank(r).AllReduce(streams[r], ins[r], outs[r], count))
						}
						for _, s := range streams {
							require.NoError(b, s.Synchronize())
						}
					}
					e := comm.CompareExact(ins, outs, count)
					require.Zero(b, e.Differ, "every rank has the same bits")
					b.ReportMetric(e.MaxAbs, "maxabs")
					b.ReportMetric(e.MaxRel, "maxrel")
					b.ReportMetric(e.RelRMS, "relrms")
					b.ReportMetric(rmsOfSum(partials), "rms")
				})
			}
		}
	}
}

// lastPartials runs ids through stories260K at TP world on the unfused path and returns
// every rank's partial of the last block's all-reduce.
func lastPartials(b *testing.B, world int, cfg Config, src format.Source, ids []int32) [][]float32 {
	b.Helper()
	g, err := tp.NewGroup(tp.GroupConfig{World: world, SMs: 2})
	require.NoError(b, err)
	defer g.Close()
	m, err := NewLlama(g, cfg, src, LlamaOptions{MaxTokens: len(ids), KVBlocks: 8, Fused: fused.Unfused})
	require.NoError(b, err)
	defer m.Close()
	require.NoError(b, m.Forward(oneSequence(m, ids, 0, 0)))
	out := make([][]float32, world)
	for r, rk := range m.ranks {
		out[r] = slices.Clone(rk.act.x.Float32s()[:len(ids)*cfg.Hidden])
	}
	return out
}

func rmsOfSum(partials [][]float32) float64 {
	ss := 0.0
	for i := range partials[0] {
		var acc float32
		for _, p := range partials {
			acc += p[i]
		}
		ss += float64(acc) * float64(acc)
	}
	return math.Sqrt(ss / float64(len(partials[0])))
}
