package perf

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/models"
)

func lookup(t *testing.T, profile, model string) (hw.Profile, models.Config) {
	t.Helper()
	p, err := hw.Lookup(profile)
	require.NoError(t, err)
	cfg, err := models.Preset(model)
	require.NoError(t, err)
	return p, cfg
}

// TestEveryProfileAndPreset: every profile prices every preset at every TP degree the
// model divides, with positive times and a sensible shape: more GPUs hold fewer weight
// bytes each, and a bigger batch gets more tokens per second.
func TestEveryProfileAndPreset(t *testing.T) {
	for _, p := range hw.Profiles() {
		for _, name := range models.Presets() {
			cfg, err := models.Preset(name)
			require.NoError(t, err)
			var prevWeights int64
			for _, n := range []int{1, 2, 4, 8} {
				one, err := Predict(Config{Profile: p, Model: cfg, TP: n, Batch: 1})
				if err != nil {
					require.ErrorContains(t, err, "divid", "%s %s TP %d", p.Name, name, n) // only shapes TP cannot split
					continue
				}
				require.Positive(t, one.Step, "%s %s TP %d", p.Name, name, n)
				if prevWeights > 0 {
					require.Less(t, one.WeightBytes, prevWeights, "%s %s TP %d", p.Name, name, n)
				}
				prevWeights = one.WeightBytes
				many, err := Predict(Config{Profile: p, Model: cfg, TP: n, Batch: 8})
				require.NoError(t, err)
				require.Greater(t, many.TokensPerSec, one.TokensPerSec, "%s %s TP %d", p.Name, name, n)
				require.Equal(t, 8*one.KVBytes, many.KVBytes)
			}
		}
	}
}

// TestSelectorPicksPerProfile: the algorithm at each call site is the selector's, with the
// profile's cost model as its table: fused NVLS for a batch-1 decode on H100 at TP 8 (the
// α-β model prices NVLS below one-shot at every size), fused one-shot on A100 (no NVLink
// SHARP), the ring on a PCIe node beyond two GPUs (vLLM's rule), and NCCL forces the ring.
func TestSelectorPicksPerProfile(t *testing.T) {
	h100, cfg := lookup(t, "h100-sxm", "llama-3-70b")
	pred, err := Predict(Config{Profile: h100, Model: cfg, TP: 8, Batch: 1})
	require.NoError(t, err)
	require.Equal(t, []Site{
		{After: "embedding", Op: "allreduce+rmsnorm", Algo: "nvls", Message: 8192 * 4, Calls: 1},
		{After: "o_proj", Op: "allreduce+rmsnorm", Algo: "nvls", Message: 8192 * 4, Calls: 80},
		{After: "down_proj", Op: "allreduce+rmsnorm", Algo: "nvls", Message: 8192 * 4, Calls: 80},
		{After: "topk", Op: "allgather", Algo: "oneshot", Message: 4 * 4, Calls: 1}, // one candidate (logit, id) and the sampler's two terms, which every decode graph gathers
	}, withoutTimes(pred.Sites))
	require.Greater(t, pred.CommShare, 0.0)
	require.Less(t, pred.CommShare, 1.0)

	a100, _ := lookup(t, "a100-sxm-80g", "llama-3-70b")
	pred, err = Predict(Config{Profile: a100, Model: cfg, TP: 8, Batch: 1})
	require.NoError(t, err)
	require.Equal(t, "oneshot", pred.Sites[1].Algo)

	pcie, _ := lookup(t, "l40s-pcie", "llama-3-70b")
	pred, err = Predict(Config{Profile: pcie, Model: cfg, TP: 4, Batch: 1})
	require.NoError(t, err)
	require.Equal(t, "ring", pred.Sites[1].Algo)

	pred, err = Predict(Config{Profile: h100, Model: cfg, TP: 8, Batch: 1, Collectives: NCCL})
	require.NoError(t, err)
	require.Equal(t, "nccl-ring", pred.Sites[1].Algo)
	require.Equal(t, device.OpAllReduce, pred.Sites[1].Op, "the ring has no fused norm")

	one, err := Predict(Config{Profile: h100, Model: cfg, TP: 1, Batch: 1})
	require.NoError(t, err)
	require.Empty(t, one.Sites)
	require.Zero(t, one.CommShare)
	require.Positive(t, one.ByClass[device.ClassNorm], "the fused norm is still work at TP 1")
}

func withoutTimes(sites []Site) []Site {
	out := make([]Site, len(sites))
	for i, s := range sites {
		s.Time = 0
		out[i] = s
	}
	return out
}

// TestGraphsAndFit: eager launches cost more than replays; Llama-3-70B in bf16 does not fit
// one 80 GB GPU and fits eight.
func TestGraphsAndFit(t *testing.T) {
	p, cfg := lookup(t, "h100-sxm", "llama-3-70b")
	graph, err := Predict(Config{Profile: p, Model: cfg, TP: 8, Batch: 1})
	require.NoError(t, err)
	eager, err := Predict(Config{Profile: p, Model: cfg, TP: 8, Batch: 1, Eager: true})
	require.NoError(t, err)
	require.Greater(t, eager.Step, graph.Step)
	require.True(t, graph.Fits)
	require.Positive(t, graph.ByClass[device.ClassGEMM])

	one, err := Predict(Config{Profile: p, Model: cfg, TP: 1, Batch: 1})
	require.NoError(t, err)
	require.False(t, one.Fits, "%d weight bytes on one GPU", one.WeightBytes)
	require.Greater(t, one.WeightBytes, int64(130e9))
}

func TestPredictRefusesBadPlans(t *testing.T) {
	p, cfg := lookup(t, "h100-sxm", "llama-2-7b")
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Profile: p, Model: cfg, TP: 0, Batch: 1}, "TP degree 0"},
		{Config{Profile: p, Model: cfg, TP: 16, Batch: 1}, "TP degree 16"},
		{Config{Profile: p, Model: cfg, TP: 1, Batch: 0}, "batch 0"},
		{Config{Profile: p, Model: cfg, TP: 1, Batch: 1, Context: 5000}, "context of 5000"},
		{Config{Profile: p, Model: cfg, TP: 1, Batch: 1, Collectives: NCCL, Algo: comm.OneShot}, "NCCL"},
		{Config{Profile: hw.Profile{Name: "x"}, Model: cfg, TP: 1, Batch: 1}, `profile "x"`},
		{Config{Profile: p, Model: models.Config{Name: "empty"}, TP: 1, Batch: 1}, "empty"},
	} {
		_, err := Predict(c.cfg)
		require.ErrorContains(t, err, c.want)
	}
}

// TestOverlapTradeoff: two micro-batches on separate streams hide the collectives of one
// behind the other's compute, but each micro-batch reads every weight again. Where the
// GEMMs are compute-bound (a large batch) overlap wins; at a memory-bound decode batch the
// second weight pass costs more than the communication it hides.
func TestOverlapTradeoff(t *testing.T) {
	p, cfg := lookup(t, "h100-sxm", "llama-3-70b")
	for _, c := range []struct {
		batch int
		wins  bool
	}{{512, true}, {8, false}} {
		serial, err := Predict(Config{Profile: p, Model: cfg, TP: 8, Batch: c.batch})
		require.NoError(t, err)
		overlap, err := Predict(Config{Profile: p, Model: cfg, TP: 8, Batch: c.batch, Overlap: true})
		require.NoError(t, err)
		t.Logf("batch %d: serial %v, overlapped %v", c.batch, serial.Step, overlap.Step)
		require.Equal(t, c.wins, overlap.Step < serial.Step, "batch %d", c.batch)
		var after []string
		for _, s := range overlap.Sites {
			after = append(after, s.After)
		}
		require.Contains(t, after, "o_proj")
		require.Contains(t, after, "down_proj")
		require.NotContains(t, after, "")
	}
}

// TestKVDType: the KV cache defaults to the weights' dtype; f32 doubles its bytes, and
// attention, which reads it every step, takes longer.
func TestKVDType(t *testing.T) {
	p, cfg := lookup(t, "h100-sxm", "llama-3-8b")
	half, err := Predict(Config{Profile: p, Model: cfg, TP: 2, Batch: 32, Context: 4096})
	require.NoError(t, err)
	require.Equal(t, dtype.BF16, half.Config.KVDType)
	full, err := Predict(Config{Profile: p, Model: cfg, TP: 2, Batch: 32, Context: 4096, KVDType: dtype.F32})
	require.NoError(t, err)
	require.Equal(t, 2*half.KVBytes, full.KVBytes)
	require.Greater(t, full.ByClass[device.ClassAttention], half.ByClass[device.ClassAttention])
	require.Equal(t, half.ByClass[device.ClassGEMM], full.ByClass[device.ClassGEMM])
}
