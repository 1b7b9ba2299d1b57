package perf

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/hw"
)

// TestScatterGatherModel: a reduce-scatter of each rank's slice costs what an all-gather
// of that slice costs, on the idealised and the calibrated model, for both algorithms;
// the direct one is 2α + (n-1)·S/β, the ring (n-1)·(α + S/β).
func TestScatterGatherModel(t *testing.T) {
	ideal, _ := lookup(t, "h100-sxm-ideal", "demo")
	calibrated, _ := lookup(t, "h100-sxm", "demo")
	const n, slice = 8, 64 << 10
	α, β := ideal.Alpha.Seconds(), ideal.LinkBytesPerSec
	for _, a := range []comm.Algo{comm.OneShot, comm.Ring} {
		for _, p := range []hw.Profile{ideal, calibrated} {
			rs, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpReduceScatter, Algo: a, Ranks: n, Bytes: slice})
			require.NoError(t, err)
			ag, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllGather, Algo: a, Ranks: n, Bytes: slice})
			require.NoError(t, err)
			require.Equal(t, ag, rs, "%s %v", p.Name, a)
		}
	}
	direct, err := CostsOf(ideal, TPSlice).Time(Collective{Op: device.OpReduceScatter, Algo: comm.OneShot, Ranks: n, Bytes: slice})
	require.NoError(t, err)
	require.InDelta(t, 2*α+(n-1)*slice/β, direct.Seconds(), 1e-9)
	ring, err := CostsOf(ideal, TPSlice).Time(Collective{Op: device.OpReduceScatter, Algo: comm.Ring, Ranks: n, Bytes: slice})
	require.NoError(t, err)
	require.InDelta(t, (n-1)*(α+slice/β), ring.Seconds(), 1e-9)
	_, err = CostsOf(ideal, TPSlice).Time(Collective{Op: device.OpReduceScatter, Algo: comm.TwoShot, Ranks: n, Bytes: slice})
	require.ErrorContains(t, err, "no all-gather time for algorithm twoshot")

	// NCCL's ring moves the same slices in the same n-1 steps either way.
	for _, proto := range comm.Protos {
		rs, err := CostsOf(calibrated, NCCL).Time(Collective{Op: device.OpReduceScatter, Proto: proto, Ranks: n, Bytes: slice})
		require.NoError(t, err)
		ag, _ := CostsOf(calibrated, NCCL).Time(Collective{Op: device.OpAllGather, Proto: proto, Ranks: n, Bytes: slice})
		require.Equal(t, ag, rs, "%v", proto)
	}
}

// TestSeqParallelModel: the fused sequence-parallel exchange is two-shot's shape with half
// as much again to gather, 4α + 3(n-1)/n·S/β (two-shot's fixed cost and efficiency where
// calibrated), so it costs (n-1)/n·S/β more than two-shot; only direct exists; NCCL runs
// its reduce-scatter and then its all-gather of twice the slices.
func TestSeqParallelModel(t *testing.T) {
	ideal, _ := lookup(t, "h100-sxm-ideal", "demo")
	calibrated, _ := lookup(t, "h100-sxm", "demo")
	const n, bytes = 8, 1 << 20
	op := device.OpReduceScatterRMSNormAllGather
	sp, err := CostsOf(ideal, TPSlice).Time(Collective{Op: op, Algo: comm.OneShot, Ranks: n, Bytes: bytes})
	require.NoError(t, err)
	α, β := ideal.Alpha.Seconds(), ideal.LinkBytesPerSec
	require.InDelta(t, 4*α+3*(n-1)/float64(n)*bytes/β, sp.Seconds(), 1e-9)
	for _, p := range []struct {
		name string
		eff  float64
	}{{"ideal", 1}, {"calibrated", calibrated.Calibration.TwoShot.Efficiency}} {
		prof := ideal
		if p.name == "calibrated" {
			prof = calibrated
		}
		sp, err := CostsOf(prof, TPSlice).Time(Collective{Op: op, Algo: comm.OneShot, Ranks: n, Bytes: bytes})
		require.NoError(t, err)
		two, err := CostsOf(prof, TPSlice).Time(Collective{Op: device.OpAllReduceRMSNorm, Algo: comm.TwoShot, Ranks: n, Bytes: bytes})
		require.NoError(t, err)
		require.InDelta(t, (n-1)/float64(n)*bytes/(β*p.eff), (sp - two).Seconds(), 2e-9, p.name)
	}
	_, err = CostsOf(calibrated, TPSlice).Time(Collective{Op: op, Algo: comm.Ring, Ranks: n, Bytes: bytes})
	require.ErrorContains(t, err, "runs direct (oneshot), not ring")
	one, err := CostsOf(calibrated, TPSlice).Time(Collective{Op: op, Algo: comm.OneShot, Ranks: 1, Bytes: bytes})
	require.NoError(t, err)
	require.Zero(t, one)

	nccl, err := CostsOf(calibrated, NCCL).Time(Collective{Op: op, Proto: comm.Simple, Ranks: n, Bytes: bytes})
	require.NoError(t, err)
	rs, _ := CostsOf(calibrated, NCCL).Time(Collective{Op: device.OpReduceScatter, Proto: comm.Simple, Ranks: n, Bytes: bytes / n})
	ag, _ := CostsOf(calibrated, NCCL).Time(Collective{Op: device.OpAllGather, Proto: comm.Simple, Ranks: n, Bytes: 2 * bytes / n})
	require.Equal(t, rs+ag, nccl)
}

// TestPredictSeqParallel: a decode step with the sequence-parallel variant forced shows
// its call sites under their own op, priced, and costs a little more than two-shot's on
// H100 at a prefill-sized batch (the model has no reason to prefer it: it gathers the
// residual too, and a norm over all rows is cheap beside the exchange).
func TestPredictSeqParallel(t *testing.T) {
	h100, cfg := lookup(t, "h100-sxm", "llama-3-8b")
	sp, err := Predict(Config{Profile: h100, Model: cfg, TP: 8, Batch: 64, Fused: fused.SeqParallel})
	require.NoError(t, err)
	two, err := Predict(Config{Profile: h100, Model: cfg, TP: 8, Batch: 64, Fused: fused.TwoShot})
	require.NoError(t, err)
	require.Equal(t, len(two.Sites), len(sp.Sites))
	for i, site := range sp.Sites {
		if two.Sites[i].Op != device.OpAllReduceRMSNorm {
			continue
		}
		require.Equal(t, device.OpReduceScatterRMSNormAllGather, site.Op, "site %d after %s", i, site.After)
		require.Equal(t, "oneshot", site.Algo)
		require.Positive(t, site.Time)
		require.Greater(t, site.Time, two.Sites[i].Time, "site %d after %s", i, site.After)
	}
	require.Greater(t, sp.Step, two.Step)
}
