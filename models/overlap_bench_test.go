package models

import (
	"fmt"
	"testing"

	"github.com/tpslice/tpslice/tp"
)

// BenchmarkDecodeOverlap times one replayed decode step of a batch, with and without the
// two-batch overlap, side by side (the overlapped group has one extra SM per device for
// its comm stream, so that compute keeps the same budget):
//
//	go test -run '^$' -bench DecodeOverlap ./models/
func BenchmarkDecodeOverlap(b *testing.B) {
	for _, preset := range []string{"tiny", "demo"} {
		cfg, err := Preset(preset)
		if err != nil {
			b.Fatal(err)
		}
		src, err := NewDummy(cfg, 1)
		if err != nil {
			b.Fatal(err)
		}
		perSeq := (cfg.ContextLength + 15) / 16
		for _, batch := range []int{16, 32} {
			for _, overlap := range []bool{false, true} {
				name := "serial"
				gc := tp.GroupConfig{World: 8, SMs: 2}
				if overlap {
					name, gc.SMs, gc.CommSMs = "overlap", 3, 1
				}
				b.Run(fmt.Sprintf("%s/tp=8/batch=%d/%s", preset, batch, name), func(b *testing.B) {
					g, err := tp.NewGroup(gc)
					if err != nil {
						b.Fatal(err)
					}
					defer g.Close()
					m, err := NewLlama(g, cfg, src, LlamaOptions{MaxTokens: batch, MaxSeqs: batch, KVBlocks: batch * perSeq, Overlap: overlap})
					if err != nil {
						b.Fatal(err)
					}
					defer m.Close()
					graph, err := m.CaptureDecode(batch, 1)
					if err != nil {
						b.Fatal(err)
					}
					for s := range batch {
						graph.Step.IDs[s], graph.Step.Batch.Pos[s] = int32(s+3), int32(s%8)
						for i := range graph.Step.Batch.Tables[s] {
							graph.Step.Batch.Tables[s][i] = int32(s*perSeq + i)
						}
					}
					for b.Loop() {
						if err := graph.Replay(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
