package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/bench/collective"
)

// TestAllreduceDTypeRefusals: every command that takes --allreduce-dtype refuses a wire
// it does not know and an --algo or --fused that cannot run it, before anything loads.
func TestAllreduceDTypeRefusals(t *testing.T) {
	for _, cmd := range []string{"generate", "bench", "serve", "allreduce-bench", "plan"} {
		_, _, err := runCLI(t, cmd, "--allreduce-dtype", "fp4")
		require.ErrorContains(t, err, `unknown all-reduce wire dtype "fp4"`, cmd)
	}
	for _, cmd := range []string{"generate", "bench", "serve"} {
		_, _, err := runCLI(t, cmd, "--model", "tiny", "--allreduce-dtype", "fp8", "--algo", "ring")
		require.ErrorContains(t, err, "--allreduce-dtype fp8: --algo ring does not run it", cmd)
		_, _, err = runCLI(t, cmd, "--model", "tiny", "--allreduce-dtype", "bf16", "--fused", "nvls")
		require.ErrorContains(t, err, "--allreduce-dtype bf16: --fused nvls does not run it", cmd)
	}
	_, _, err := runCLI(t, "allreduce-bench", "-g", "2", "-b", "1K", "-e", "1K", "--allreduce-dtype", "fp8", "--algo", "oneshot,tree")
	require.ErrorContains(t, err, "--algo tree does not run --allreduce-dtype fp8")
	_, _, err = runCLI(t, "plan", "--model", "tiny", "--tp", "2", "--batch", "1", "--allreduce-dtype", "fp8", "--collectives", "nccl")
	require.ErrorContains(t, err, "NCCL collectives have no fp8 wire")
}

// TestAllreduceBenchWire: on a wire, "all" measures one-shot, two-shot and auto, and
// --check reports the error against the exact wire, which is small but not zero, the
// same on every rank.
func TestAllreduceBenchWire(t *testing.T) {
	for _, c := range []struct {
		wire   string
		maxRel float64
	}{{"bf16", 0x1p-5}, {"fp8", 0.5}} { // loose: cancelling sums of 3 ranks
		out, _, err := runCLI(t, "allreduce-bench", "-g", "3", "-b", "4K", "-e", "64K", "-f", "16", "--allreduce-dtype", c.wire,
			"--check", "--json", "--select", "default", "--iters", "1", "--warmup", "0", "--rounds", "1", "--target", "1ms")
		require.NoError(t, err)
		var rep collective.Report
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		require.Equal(t, c.wire, rep.Wire)
		for _, row := range rep.Rows {
			var algos []string
			for _, res := range row.Results {
				algos = append(algos, res.Algo)
				require.Nil(t, res.Wrong)
				require.NotNil(t, res.Error, "%s %d %s", c.wire, row.SizeBytes, res.Algo)
				require.Zero(t, res.Error.Differ)
				require.Positive(t, res.Error.MaxRel)
				require.Less(t, res.Error.MaxRel, c.maxRel)
			}
			require.Equal(t, []string{"oneshot", "twoshot", "auto"}, algos)
		}
	}
	out, _, err := runCLI(t, "allreduce-bench", "--model", "h100-sxm", "-g", "8", "-b", "1M", "-e", "1M", "--allreduce-dtype", "fp8")
	require.NoError(t, err)
	require.Contains(t, out, "# wire: fp8")
	require.Contains(t, out, "| twoshot fp8")
}

// TestGenerateOnAWire: the wire runs through the engine; stories260K's greedy story at
// TP 2 survives the bf16 wire, and the call sites say which wire they run.
func TestGenerateOnAWire(t *testing.T) {
	exact, _, err := runCLI(t, "generate", "--tp", "2", "--max-tokens", "16", "--temperature", "0", "--json")
	require.NoError(t, err)
	out, _, err := runCLI(t, "generate", "--tp", "2", "--max-tokens", "16", "--temperature", "0", "--json", "--allreduce-dtype", "bf16")
	require.NoError(t, err)
	var a, b generateReport
	require.NoError(t, json.Unmarshal([]byte(exact), &a))
	require.NoError(t, json.Unmarshal([]byte(out), &b))
	require.Equal(t, a.OutputIDs, b.OutputIDs)
	require.Contains(t, b.Allreduce["decode/mlp.down_proj"], "(bf16 wire)")
}
