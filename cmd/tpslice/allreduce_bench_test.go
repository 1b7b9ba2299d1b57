package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/bench/collective"
	"github.com/tpslice/tpslice/comm"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestAllreduceBenchCheck runs the measured benchmark with --check on a few sizes and
// requires every algorithm, auto included, to be right.
func TestAllreduceBenchCheck(t *testing.T) {
	for _, dt := range []string{"f32", "bf16"} {
		t.Run(dt, func(t *testing.T) {
			out, _, err := runCLI(t, "allreduce-bench", "-g", "3", "-b", "8", "-e", "256K", "-f", "32", "--dtype", dt,
				"--algo", "all", "--check", "--json", "--select", "tuned", "--tune-cache", t.TempDir()+"/tune.json",
				"--iters", "2", "--warmup", "1", "--rounds", "1", "--target", "1ms")
			require.NoError(t, err)
			var rep collective.Report
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			require.Equal(t, 3, rep.Ranks)
			require.Equal(t, dt, rep.DType)
			require.Equal(t, "measured", rep.Source)
			require.Equal(t, "emulated", rep.NVLS)
			require.Len(t, rep.Rows, 4) // 8, 256, 8K, 256K
			for _, row := range rep.Rows {
				var algos []string
				for _, res := range row.Results {
					algos = append(algos, res.Algo)
					require.NotNil(t, res.Wrong)
					require.Zero(t, *res.Wrong, "size %d %s", row.SizeBytes, res.Algo)
					require.Positive(t, res.TimeUS)
				}
				require.Equal(t, []string{"ring/LL", "ring/LL128", "ring/Simple", "oneshot", "twoshot", "nvls", "lamport",
					"tree/LL", "tree/LL128", "tree/Simple", "auto"}, algos)
				require.Contains(t, algos[:10], row.Auto)
			}
		})
	}
}

// TestAllreduceBenchStar: the star baseline runs when named, right under --check at 8
// ranks, and the model prices it (and the flag-free one-shot, which ties one-shot) beside
// the algorithms the profile offers, without letting them into the model's choices ("all"
// leaves the star out: TestAllreduceBenchCheck).
func TestAllreduceBenchStar(t *testing.T) {
	out, _, err := runCLI(t, "allreduce-bench", "-g", "8", "-b", "8", "-e", "64K", "-f", "64", "--algo", "star", "--check", "--json",
		"--iters", "2", "--warmup", "1", "--rounds", "1", "--target", "1ms")
	require.NoError(t, err)
	var rep collective.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Rows, 3) // 8, 512, 32K
	for _, row := range rep.Rows {
		require.Len(t, row.Results, 1)
		require.Equal(t, "star", row.Results[0].Algo)
		require.NotNil(t, row.Results[0].Wrong)
		require.Zero(t, *row.Results[0].Wrong, "size %d", row.SizeBytes)
	}

	model := func(extra ...string) collective.Report {
		args := append([]string{"allreduce-bench", "--model", "h100-sxm", "-g", "8", "-b", "16K", "-e", "64M", "-f", "16", "--json"}, extra...)
		out, _, err := runCLI(t, args...)
		require.NoError(t, err)
		var rep collective.Report
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		return rep
	}
	offered, named := model(), model("--algo", "star,lamport")
	require.Len(t, named.Rows, len(offered.Rows))
	for i, row := range named.Rows {
		base := offered.Rows[i]
		require.Equal(t, base.Auto, row.Auto)
		require.Equal(t, base.FastestWithoutNVLS, row.FastestWithoutNVLS, "the model's choices leave the star out")
		require.Len(t, row.Results, len(base.Results)+2)
		k := slices.IndexFunc(row.Results, func(r collective.Result) bool { return r.Algo == "star" })
		require.Equal(t, k, slices.IndexFunc(base.Results, func(r collective.Result) bool { return r.Algo == "nccl LL" }), "star after tpslice's, before NCCL's")
		oneShot := slices.IndexFunc(row.Results, func(r collective.Result) bool { return r.Algo == "oneshot" })
		require.Greater(t, row.Results[k].TimeUS, row.Results[oneShot].TimeUS, "size %d: the star against one-shot", row.SizeBytes)
	}
}

// TestAllreduceBenchScatterGather: --op reducescatter and allgather measure both
// algorithms with --check, on sizes that hold n·count whole elements, and price them on a
// model profile next to NCCL's ring.
func TestAllreduceBenchScatterGather(t *testing.T) {
	for _, op := range []string{"reducescatter", "allgather"} {
		for _, dt := range []string{"f32", "bf16"} {
			t.Run(op+"/"+dt, func(t *testing.T) {
				out, _, err := runCLI(t, "allreduce-bench", "--op", op, "-g", "3", "-b", "64", "-e", "64K", "-f", "32", "--dtype", dt,
					"--check", "--json", "--iters", "1", "--warmup", "1", "--rounds", "1", "--target", "1ms")
				require.NoError(t, err)
				var rep collective.Report
				require.NoError(t, json.Unmarshal([]byte(out), &rep))
				require.Equal(t, op, rep.Op)
				require.Empty(t, rep.NVLS)
				require.Len(t, rep.Rows, 3) // 64 B, 2 KiB, 64 KiB rounded down to 3 ranks' whole elements
				elem := map[string]int{"f32": 4, "bf16": 2}[dt]
				for _, row := range rep.Rows {
					require.Zero(t, row.SizeBytes%int64(3*elem), "whole elements on every rank")
					require.Equal(t, int(row.SizeBytes)/elem, row.Count)
					require.Equal(t, "oneshot", row.Auto)
					var algos []string
					for _, res := range row.Results {
						algos = append(algos, res.Algo)
						require.NotNil(t, res.Wrong)
						require.Zero(t, *res.Wrong, "size %d %s", row.SizeBytes, res.Algo)
						require.InDelta(t, res.AlgBWGBps*2/3, res.BusBWGBps, 1e-9, "busbw = algbw·(n-1)/n")
					}
					require.Equal(t, []string{"oneshot", "ring", "auto"}, algos)
				}
			})
		}
	}
	text, _, err := runCLI(t, "allreduce-bench", "--op", "allgather", "-g", "4", "-b", "1K", "-e", "1K", "--fabric", "pcie", "--algo", "ring",
		"--iters", "1", "--rounds", "1", "--target", "1ms")
	require.NoError(t, err)
	require.Contains(t, text, "allreduce-bench --op allgather: 4 ranks, f32, measured")
	require.Contains(t, text, "busbw = algbw·(n-1)/n")
	require.Contains(t, text, " 1024   256  f32 ring | ")

	out, _, err := runCLI(t, "allreduce-bench", "--op", "reducescatter", "--model", "h100-sxm", "-g", "8", "-b", "16K", "-e", "16M", "-f", "1024", "--json")
	require.NoError(t, err)
	var rep collective.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Rows, 2)
	var algos []string
	for _, res := range rep.Rows[0].Results {
		algos = append(algos, res.Algo)
	}
	require.Equal(t, []string{"oneshot", "ring", "nccl LL", "nccl LL128", "nccl Simple"}, algos)
	require.Equal(t, "oneshot", rep.Rows[1].FastestWithoutNVLS)
}

func TestAllreduceBenchTable(t *testing.T) {
	out, _, err := runCLI(t, "allreduce-bench", "-g", "2", "-b", "1K", "-e", "4K", "-f", "4", "--fabric", "pcie",
		"--select", "default", "--iters", "1", "--rounds", "1", "--target", "1ms")
	require.NoError(t, err)
	require.Contains(t, out, "2 ranks, f32, measured on the CPU device runtime (pcie fabric)")
	require.Contains(t, out, "| lamport")
	require.NotContains(t, out, "nvls", "no multicast on pcie")
}

// TestAllreduceBenchModel prints the calibrated h100-sxm table (package collective's
// TestPrice* check its figures): NCCL's protocols and the calibration's basis.
func TestAllreduceBenchModel(t *testing.T) {
	text, _, err := runCLI(t, "allreduce-bench", "--model", "h100-sxm", "-g", "8", "-b", "16K", "-e", "16K")
	require.NoError(t, err)
	require.Contains(t, text, "nccl LL128")
	require.Contains(t, text, "vLLM PR #24111")

	text, _, err = runCLI(t, "allreduce-bench", "--model", "h100-sxm", "-g", "8", "-b", "16K", "-e", "16K", "--allreduce-dtype", "fp8")
	require.NoError(t, err)
	require.Contains(t, text, "# wire: fp8 (e4m3 codes and one f32 scale per 32 values, summed in f32)")
	require.Contains(t, text, "| oneshot exact algbw busbw | oneshot fp8 algbw busbw | twoshot exact")
}

// TestAllreduceBenchHelp: the help lists every all-reduce algorithm with comm's line on it.
func TestAllreduceBenchHelp(t *testing.T) {
	_, stderr, err := runCLI(t, "allreduce-bench", "-h")
	require.ErrorIs(t, err, flag.ErrHelp)
	for _, a := range append(slices.Clone(comm.Algos), comm.HostAlgos...) {
		require.Contains(t, stderr, fmt.Sprintf("\n  %-9s %s\n", a, a.Doc()))
	}
	require.Contains(t, stderr, "\n  tree      NCCL's double binary tree")
	require.Contains(t, stderr, "-algo string\n    \tan algorithm ("+comm.AlgoNames(nil)+"), auto, all")
}

func TestAllreduceBenchBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--dtype", "f64"}, `--dtype: unknown dtype "f64"`},
		{[]string{"-g", "9"}, "--ranks: want 1 to 8, got 9"},
		{[]string{"-b", "1M", "-e", "1K"}, "--end (1024) is smaller than --begin (1048576)"},
		{[]string{"-b", "2"}, "--begin: 2 bytes is less than one f32 element"},
		{[]string{"-f", "1"}, "--factor: want at least 2"},
		{[]string{"--algo", "hypercube"}, `unknown all-reduce algorithm "hypercube"`},
		{[]string{"--proto", "LL64"}, `--proto: unknown protocol "LL64"`},
		{[]string{"--model", "h100-sxm", "--proto", "simple,LL256"}, `--proto: unknown protocol "LL256"`},
		{[]string{"--fabric", "pcie", "--algo", "nvls"}, "nvls needs the nvswitch fabric, not pcie"},
		{[]string{"--fabric", "infiniband"}, `unknown fabric "infiniband"`},
		{[]string{"--model", "tpu-v5"}, "h100-sxm"},
		{[]string{"--model", "h100-sxm", "--allreduce-dtype", "bf16", "--proto", "LL64"}, `--proto: unknown protocol "LL64"`},
		{[]string{"--model", "h100-sxm", "--hosts", "2", "-g", "16", "--allreduce-dtype", "bf16"}, "the wire is not modelled across hosts"},
		{[]string{"--select", "fastest"}, "--select: want tuned, default or model:PROFILE"},
		{[]string{"--op", "broadcast"}, `--op: want allreduce, reducescatter or allgather, got "broadcast"`},
		{[]string{"--op", "reducescatter", "--algo", "tree"}, "--algo: reducescatter runs oneshot (direct) or ring, not tree"},
		{[]string{"--op", "allgather", "-g", "8", "-b", "4", "-e", "16"}, "--end: allgather needs at least n·4 = 32 bytes"},
		{[]string{"-e", "12Q"}, `bad size "12Q"`},
		{[]string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			_, _, err := runCLI(t, append([]string{"allreduce-bench", "--iters", "1", "--rounds", "1", "--select", "default"}, tc.args...)...)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, _, err := runCLI(t, "frobnicate")
	require.ErrorContains(t, err, `unknown command "frobnicate"`)
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"8": 8, "64K": 64 << 10, "1m": 1 << 20, "2G": 2 << 30, "16KB": 16 << 10} {
		got, err := parseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	require.Equal(t, "64M", formatSize(64<<20))
	require.Equal(t, "1000", formatSize(1000))
	for _, bad := range []string{"", "-1", "K", "1T", "2000G"} {
		_, err := parseSize(bad)
		require.Error(t, err, bad)
	}
}
