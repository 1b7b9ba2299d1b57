package models_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/models/format"
)

// BenchmarkShardRead reads one rank's row shard (column-parallel) and column shard
// (row-parallel) of a 1024 × 4096 f32 matrix at TP = 8, from a mapped GGUF file and from
// dummy weights, into f32 and bf16. Run: go test -run '^$' -bench ShardRead ./models/
func BenchmarkShardRead(b *testing.B) {
	cfg := models.Config{Name: "bench", Hidden: 1024, Intermediate: 4096, Layers: 1, Heads: 8, KVHeads: 8,
		HeadDim: 128, Vocab: 8, RopeTheta: 1e4, RMSEps: 1e-5, ContextLength: 8, RopeLayout: models.RopeAdjacentPairs}
	d, err := models.NewDummy(cfg, 1)
	require.NoError(b, err)
	ts, err := format.ReadAll(d, dtype.F32)
	require.NoError(b, err)
	path := filepath.Join(b.TempDir(), "bench.gguf")
	require.NoError(b, models.WriteGGUF(path, cfg, ts))
	g, _, err := models.OpenGGUF(path)
	require.NoError(b, err)
	defer g.Close()

	const tp = 8
	name := "blk.0.ffn_down.weight" // [1024, 4096]
	info, _ := g.Tensor(name)
	rows, cols := info.Dims()
	for _, s := range []struct {
		name string
		src  format.Source
	}{{"gguf", g}, {"dummy", d}} {
		src := s.src
		for _, shard := range []struct {
			kind string
			r    format.Region
		}{
			{"rows", info.RowRange(0, rows/tp)},
			{"cols", info.ColRange(cols-cols/tp, cols)},
		} {
			for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
				var dst format.Dest
				if dt == dtype.F32 {
					dst = format.F32Dest(make([]float32, shard.r.Len()))
				} else {
					dst = format.U16Dest(dt, make([]uint16, shard.r.Len()))
				}
				b.Run(fmt.Sprintf("%s/%s/%v", s.name, shard.kind, dt), func(b *testing.B) {
					b.SetBytes(int64(shard.r.Len() * 4))
					for b.Loop() {
						if err := src.Read(name, shard.r, dst); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
