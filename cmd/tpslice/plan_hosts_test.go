package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/bench/collective"
	"github.com/tpslice/tpslice/perf"
)

// TestPlanAcrossHosts: --hosts 2 prices TP 16 over two 8-GPU hosts beside TP 8 in one,
// compares them per batch and ends with one verdict; TP 8 is priced as without --hosts.
func TestPlanAcrossHosts(t *testing.T) {
	out, _, err := runCLI(t, "plan", "--hw", "h100-sxm", "--model", "llama-3-8b", "--hosts", "2", "--tp", "8,16", "--batch", "1,256")
	require.NoError(t, err)
	require.Contains(t, out, "16 (2×8)")
	require.Contains(t, out, "twolevel")
	require.Contains(t, out, "between hosts 50 GB/s and 2.7µs per exchange per GPU")
	for _, b := range []string{"batch 1: TP 16 (2×8) ", "batch 256: TP 16 (2×8) "} {
		require.Contains(t, out, b)
	}
	require.Equal(t, 1, strings.Count(out, "\nverdict: TP across hosts "), out)

	js, _, err := runCLI(t, "plan", "--hw", "h100-sxm", "--model", "llama-3-8b", "--hosts", "2", "--tp", "8,16", "--batch", "8", "--json")
	require.NoError(t, err)
	var rep perf.Plan
	require.NoError(t, json.Unmarshal([]byte(js), &rep))
	require.Len(t, rep.Rows, 2)
	require.Equal(t, 0, rep.Rows[0].Hosts)
	require.Equal(t, 2, rep.Rows[1].Hosts)
	require.Equal(t, "twolevel", rep.Rows[1].AllReduce["after o_proj"].Algo, "128 KiB per rank")

	single, _, err := runCLI(t, "plan", "--hw", "h100-sxm", "--model", "llama-3-8b", "--tp", "8", "--batch", "8", "--json")
	require.NoError(t, err)
	var one perf.Plan
	require.NoError(t, json.Unmarshal([]byte(single), &one))
	require.Equal(t, one.Rows[0], rep.Rows[0], "TP 8 inside one host is priced alike with or without --hosts")
}

func TestPlanAcrossHostsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--hosts", "0"}, "--hosts: want at least 1, got 0"},
		{[]string{"--tp", "16"}, `--tp "16": "16" is not an integer from 1 to 8`},
		{[]string{"--hosts", "2", "--tp", "17"}, `"17" is not an integer from 1 to 16`},
		{[]string{"--hosts", "2", "--tp", "16", "--hw", "pcie"}, "the profile has no network between hosts"},
		{[]string{"--hosts", "2", "--tp", "16", "--collectives", "nccl", "--hw", "h100-sxm-ideal"}, "NCCL across hosts is modelled on calibrated profiles only"},
	} {
		_, _, err := runCLI(t, append([]string{"plan", "--model", "llama-3-8b", "--batch", "1"}, tc.args...)...)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// TestAllreduceBenchAcrossHosts: --hosts adds the two-level column, priced (--model) and
// measured on an emulated node, where every element is right.
func TestAllreduceBenchAcrossHosts(t *testing.T) {
	out, _, err := runCLI(t, "allreduce-bench", "--model", "h100-sxm", "-g", "16", "--hosts", "2", "-b", "1M", "-e", "1M")
	require.NoError(t, err)
	require.Contains(t, out, "over 2 hosts of 8")
	require.Contains(t, out, "twolevel")
	require.NotContains(t, out, "| nvls")

	js, _, err := runCLI(t, "allreduce-bench", "-g", "4", "--hosts", "2", "-b", "4K", "-e", "64K", "-f", "16", "--check",
		"--select", "default", "--rounds", "2", "--budget", "50ms", "--json")
	require.NoError(t, err)
	var rep collective.Report
	require.NoError(t, json.Unmarshal([]byte(js), &rep))
	require.Equal(t, 2, rep.Hosts)
	require.Empty(t, rep.NVLS, "no multicast across hosts")
	for _, row := range rep.Rows {
		require.Equal(t, "twolevel", row.Auto)
		var algos []string
		for _, r := range row.Results {
			algos = append(algos, r.Algo)
			require.Zero(t, *r.Wrong, "%s at %d bytes", r.Algo, row.SizeBytes)
		}
		require.Equal(t, []string{"ring/LL", "ring/LL128", "ring/Simple", "oneshot", "twoshot", "lamport",
			"tree/LL", "tree/LL128", "tree/Simple", "twolevel", "auto"}, algos, "the ring and the tree under every protocol (--proto all)")
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-g", "5", "--hosts", "2"}, "--ranks 5 over --hosts 2: want a multiple of 2 up to 16"},
		{[]string{"--hosts", "0"}, "--hosts: want at least 1, got 0"},
		{[]string{"-g", "4", "--hosts", "2", "--algo", "nvls"}, "multicast does not cross 2 hosts"},
	} {
		_, _, err := runCLI(t, append([]string{"allreduce-bench"}, tc.args...)...)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}
