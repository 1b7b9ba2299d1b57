package chart

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTPSweep: both charts are written; a point's bad latency is refused as Lines refuses
// it, the series named by its batch.
func TestTPSweep(t *testing.T) {
	dir := t.TempDir()
	bd := map[string]float64{"gemm": 1, "allreduce.oneshot": 0.5}
	points := []TPPoint{{TP: 1, Batch: 1, Latency: 2, Breakdown: bd}, {TP: 2, Batch: 1, Latency: 1.5, Breakdown: bd},
		{TP: 1, Batch: 8, Latency: 3, Breakdown: bd}, {TP: 2, Batch: 8, Latency: 2, Breakdown: bd}}
	require.NoError(t, TPSweep(dir, "tiny", points, []string{"gemm", "allreduce.oneshot", "attention"}))
	requirePNG(t, filepath.Join(dir, "latency_vs_tp.png"))
	requirePNG(t, filepath.Join(dir, "breakdown.png"))

	points[3].Latency = math.NaN()
	require.ErrorContains(t, TPSweep(t.TempDir(), "tiny", points, []string{"gemm"}), `series 1 ("batch 8")`)
}
