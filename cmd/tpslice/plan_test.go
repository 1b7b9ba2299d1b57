package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/perf"
	"github.com/tpslice/tpslice/topo"
)

// TestPlanEveryProfileAndPreset: plan prints a table for every profile and preset, naming
// the fastest TP degree that fits.
func TestPlanEveryProfileAndPreset(t *testing.T) {
	for _, p := range hw.Names() {
		for _, m := range models.Presets() {
			out, _, err := runCLI(t, "plan", "--hw", p, "--model", m, "--tp", "1,2,8", "--batch", "1,32")
			require.NoError(t, err, "%s %s", p, m)
			require.Contains(t, out, "# "+m+" on "+p)
			require.Contains(t, out, "batch 32: ")
		}
	}
}

// TestPlanSeqParallel: the sequence-parallel variant's call sites are named for it, and
// its JSON sites carry its op.
func TestPlanSeqParallel(t *testing.T) {
	out, _, err := runCLI(t, "plan", "--model", "llama-3-8b", "--tp", "8", "--batch", "64", "--fused", "seqparallel")
	require.NoError(t, err)
	require.Contains(t, out, "o_proj:seqparallel ")
	require.Contains(t, out, "topk:oneshot ", "the sampling all-gather stays what it was")
	js, _, err := runCLI(t, "plan", "--model", "llama-3-8b", "--tp", "8", "--batch", "64", "--fused", "seqparallel", "--json")
	require.NoError(t, err)
	require.Contains(t, js, `"op": "reducescatter+rmsnorm+allgather"`)
}

func TestPlanJSONAndPlots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plots")
	out, _, err := runCLI(t, "plan", "--hw", "h100-sxm", "--model", "llama-3-70b", "--tp", "1,2,4,8", "--batch", "1,8,32",
		"--json", "--plot", dir)
	require.NoError(t, err)
	var rep perf.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "h100-sxm", rep.HW)
	require.Equal(t, "llama-3-70b", rep.Model)
	require.Len(t, rep.Rows, 12)
	for _, r := range rep.Rows {
		require.Positive(t, r.TokenLatencyMS)
		require.InDelta(t, float64(r.Batch)*1000/r.TokenLatencyMS, r.TokensPerSec, 1e-6*r.TokensPerSec)
		require.Equal(t, r.WeightGB+r.KVGB <= 72, r.Fits, "TP %d batch %d: 90%% of 80 GB", r.TP, r.Batch)
		if r.TP == 1 || r.TP == 8 {
			require.Equal(t, r.TP == 8, r.Fits, "70B bf16 needs more than one 80 GB GPU: TP %d batch %d", r.TP, r.Batch)
		}
		if r.TP > 1 {
			require.Contains(t, r.AllReduce, "after o_proj")
		} else {
			require.Empty(t, r.AllReduce, "one GPU exchanges nothing")
			require.Zero(t, r.CommShare)
		}
		require.Contains(t, r.BreakdownMS, "gemm")
	}
	for _, name := range []string{"latency_vs_tp.png", "breakdown.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		_, err = png.Decode(f)
		require.NoError(t, f.Close())
		require.NoError(t, err, name)
	}
}

// TestPlanQuantizedWeights: --dtype takes GGML block types, priced at their bits per
// weight (Q4_K 4.5, Q8_0 8.5: 70B fits one 80 GB GPU at 4.5 bits), with a bf16 KV cache;
// decode, bound by weight bytes, runs faster than bf16.
func TestPlanQuantizedWeights(t *testing.T) {
	plan := func(dt string) perf.Plan {
		out, _, err := runCLI(t, "plan", "--hw", "h100-sxm", "--model", "llama-3-70b", "--tp", "1,8", "--batch", "1", "--dtype", dt, "--json")
		require.NoError(t, err)
		var rep perf.Plan
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		require.Len(t, rep.Rows, 2)
		return rep
	}
	bf16 := plan("bf16")
	for _, tc := range []struct {
		dt   string
		bits float64
	}{{"q4_k", 4.5}, {"q8_0", 8.5}, {"q6_k", 6.5625}} {
		rep := plan(tc.dt)
		require.Equal(t, tc.dt, rep.WeightDType)
		require.Equal(t, "bf16", rep.KVDType)
		for i, r := range rep.Rows {
			require.InDelta(t, bf16.Rows[i].WeightGB*tc.bits/16, r.WeightGB, 0.02*r.WeightGB, "%s TP %d", tc.dt, r.TP)
			require.Less(t, r.TokenLatencyMS, bf16.Rows[i].TokenLatencyMS, "%s TP %d", tc.dt, r.TP)
		}
	}
	require.True(t, plan("q4_k").Rows[0].Fits, "70B at 4.5 bits per weight fits one 80 GB GPU")
}

func TestPlanRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--hw", "tpu"}, `unknown hardware profile "tpu"`},
		{[]string{"--model", "gpt-9"}, `--model "gpt-9"`},
		{[]string{"--tp", "1,x"}, `--tp "1,x"`},
		{[]string{"--tp", "16"}, `--tp "16"`},
		{[]string{"--tp", "2,2"}, "listed twice"},
		{[]string{"--batch", "0"}, `--batch "0"`},
		{[]string{"--dtype", "int3"}, "--dtype"},
		{[]string{"--collectives", "mpi"}, "--collectives"},
		{[]string{"--context", "100000"}, "context of 100000"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		_, _, err := runCLI(t, append([]string{"plan"}, c.args...)...)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
}

// TestPlanAutoWithoutDriver: --hw auto describes this node's GPUs, so without NVML it
// refuses in one line instead of predicting a simulated node.
func TestPlanAutoWithoutDriver(t *testing.T) {
	if tp, _ := topo.Detect(topo.Auto, 8); tp.Note() == "" {
		t.Skip("NVML answers here: auto maps the real GPUs")
	}
	_, _, err := runCLI(t, "plan", "--hw", "auto", "--model", "tiny")
	require.ErrorContains(t, err, "auto needs this node's GPUs")
}
