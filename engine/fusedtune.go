package engine

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/diag"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/tp"
)

// FusedTunePath is the file in dir of the fused table tuned at TP world on fabric f for
// rows of hidden values.
func FusedTunePath(dir string, world int, f device.Fabric, hidden int) string {
	return filepath.Join(dir, fmt.Sprintf("fused-tune-tp%d-%v-hidden%d.json", world, f, hidden))
}

// fusedTable is the fused selection table the model gets on group g: the configured one,
// or the one tuned (or read from the cache) for the model's hidden size and every token
// bucket a step can have, or nil. A rebuilt group of the same node reads the cache. On a
// low-precision all-reduce wire nothing is tuned: fused.Select consults a table only on
// the exact wire.
func (e *Engine) fusedTable(g *tp.Group) (*fused.Table, error) {
	cfg := e.cfg
	if cfg.FusedTable != nil || cfg.FusedTuneDir == "" || cfg.Fused != fused.Auto || g.Comm().Wire() != comm.WireExact {
		return cfg.FusedTable, nil
	}
	path := FusedTunePath(cfg.FusedTuneDir, g.World(), g.Comm().Fabric(), e.mcfg.Hidden)
	streams := make([]*device.Stream, g.World())
	for r := range streams {
		streams[r] = g.Stream(r)
	}
	start := time.Now()
	t, fresh, err := fused.TunedTable(path, g.Comm(), streams, fused.TuneOptions{
		Hidden: e.mcfg.Hidden, MaxTokens: cfg.MaxBatchTokens, Eps: float32(e.mcfg.RMSEps),
		Measure: comm.MeasureOptions{Target: time.Millisecond, Rounds: 30, Budget: 100 * time.Millisecond}})
	if t == nil {
		return nil, fmt.Errorf("engine: fused selection table: %w", err)
	}
	if d := cfg.Debug; d != nil {
		if fresh {
			d.Infof(diag.Tuning, "fused variants autotuned for hidden %d, 1 to %d tokens, in %v; cached in %s", e.mcfg.Hidden, cfg.MaxBatchTokens, time.Since(start).Round(time.Millisecond), path)
		}
		if err != nil {
			d.Warnf(diag.Tuning, "%v", err)
		}
	}
	return t, nil
}
