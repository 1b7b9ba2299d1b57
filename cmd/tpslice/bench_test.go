package main

import (
	"encoding/json"
	"image/png"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/bench/decode"
)

// TestBenchJSON runs the benchmark on tiny at TP 1 and 2 and checks the report's shape, that
// the breakdown has every class and no negative time, that TP 1 communicates nothing and TP
// 2 does, and that the plots are PNGs.
func TestBenchJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plots") // bench makes it
	out, errOut, err := runCLI(t, "bench", "--model", "tiny", "--tp", "1,2", "--batch", "1,4",
		"--prompt-len", "4", "--gen-len", "12", "--json", "--plot", dir)
	require.NoError(t, err)
	require.Contains(t, errOut, "# bench: 4/4 tp=2 batch=4", "a line per cell where stderr is no terminal")

	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	require.ElementsMatch(t, []string{"model", "weight_bytes", "read_gbps", "rows"}, slices.Collect(maps.Keys(raw)))
	for _, r := range raw["rows"].([]any) {
		require.ElementsMatch(t, []string{"tp", "batch", "ttft_ms", "prompt_tokens_per_s", "token_latency_ms_p50", "token_latency_ms_p99",
			"tokens_per_s", "e2e_tokens_per_s", "output_tokens", "comm_share", "comm_wait_share", "breakdown_ms", "allreduce"}, slices.Collect(maps.Keys(r.(map[string]any))))
	}

	var rep decode.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "tiny", rep.Model)
	require.Positive(t, rep.WeightBytes)
	require.Positive(t, rep.ReadGBps)
	require.Len(t, rep.Rows, 4)
	for i, r := range rep.Rows {
		require.Equal(t, []int{1, 1, 2, 2}[i], r.TP)
		require.Equal(t, []int{1, 4, 1, 4}[i], r.Batch)
		require.Positive(t, r.TTFTMs)
		// The prompts' tokens over the longest TTFT: positive, and no more than over the mean.
		require.Positive(t, r.PromptTokensPerS)
		require.LessOrEqual(t, r.PromptTokensPerS, float64(r.Batch*4)/r.TTFTMs*1e3*(1+1e-9), "tp %d batch %d", r.TP, r.Batch)
		require.Positive(t, r.P50Ms)
		require.GreaterOrEqual(t, r.P99Ms, r.P50Ms)
		require.Positive(t, r.TokensPerS)
		require.Positive(t, r.E2ETokensPerS)
		for _, k := range append(decode.Classes(), decode.HostOverhead) {
			require.Contains(t, r.Breakdown, k, "tp %d batch %d", r.TP, r.Batch)
		}
		var collectives []string
		for k, v := range r.Breakdown {
			require.GreaterOrEqual(t, v, 0.0, "%s at tp %d batch %d", k, r.TP, r.Batch)
			if strings.HasPrefix(k, "allreduce") {
				collectives = append(collectives, k)
			}
		}
		require.GreaterOrEqual(t, r.CommWaitShare, 0.0)
		require.LessOrEqual(t, r.CommWaitShare, r.CommShare)
		if r.TP == 1 {
			require.Zero(t, r.CommShare)
			require.Empty(t, collectives)
			require.Empty(t, r.AllReduce)
		} else {
			require.Positive(t, r.CommShare)
			require.Less(t, r.CommShare, 1.0)
			require.NotEmpty(t, collectives, "the all-reduce of each call site, by algorithm")
			for _, site := range []string{"after embedding", "after o_proj", "after down_proj"} {
				require.Contains(t, r.AllReduce[site], "allreduce", "tp %d batch %d: %v", r.TP, r.Batch, r.AllReduce)
			}
		}
	}
	for _, name := range []string{"latency_vs_tp.png", "breakdown.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		_, err = png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
	}
}

func TestBenchTable(t *testing.T) {
	out, _, err := runCLI(t, "bench", "--model", "tiny", "--tp", "2", "--batch", "2", "--prompt-len", "3", "--gen-len", "8", "--eager")
	require.NoError(t, err)
	require.Contains(t, out, "# tpslice bench: tiny")
	require.Contains(t, out, "; eager")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	head, row := strings.Fields(lines[len(lines)-2]), strings.Fields(lines[len(lines)-1])
	require.Equal(t, []string{"tp", "batch", "TTFT"}, head[:3])
	require.Contains(t, strings.Join(head, " "), "host overhead")
	require.Equal(t, []string{"2", "2"}, row[:2])
}

// TestBenchCPUProfile: --cpuprofile writes the run's CPU profile (pprof's gzipped protocol
// buffer), to find where a prompt's time goes.
func TestBenchCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	_, _, err := runCLI(t, "bench", "--model", "tiny", "--tp", "1", "--batch", "1", "--prompt-len", "4", "--gen-len", "8", "--cpuprofile", path)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, b[:2], "a gzipped profile")
}

func TestBenchBadFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tp", "0"}, `--tp "0": "0" is not an integer from 1 to 8`},
		{[]string{"--tp", "1,9"}, `--tp "1,9": "9"`},
		{[]string{"--tp", "1,x"}, `--tp "1,x": "x"`},
		{[]string{"--tp", ""}, `--tp "": ""`},
		{[]string{"--tp", "2,2"}, `--tp "2,2": 2 is listed twice`},
		{[]string{"--tp", "3"}, "--tp 3 does not fit tiny: tp: cannot shard over 3 ranks"},
		{[]string{"--batch", "0"}, `--batch "0": "0" is not an integer from 1 to 256`},
		{[]string{"--batch", "1,,2"}, `--batch "1,,2": ""`},
		{[]string{"--batch", "1000"}, `--batch "1000"`},
		{[]string{"--gen-len", "2"}, "--gen-len must be at least 8"},
		{[]string{"--prompt-len", "0"}, "--prompt-len must be at least 1, got 0"},
		{[]string{"--prompt-len", "250", "--gen-len", "10"}, "--prompt-len 250 + --gen-len 10 exceed tiny's context of 256 tokens"},
		{[]string{"--model", "gpt-9"}, "--model gpt-9"},
		{[]string{"--plot", filepath.Join(file, "sub")}, "--plot " + filepath.Join(file, "sub")},
		{[]string{"--dtype", "f8"}, "--dtype"},
		{[]string{"--fused", "maybe"}, "--fused"},
		{[]string{"--fused-select", "fastest"}, `--fused-select: want comm or tuned, got "fastest"`},
		{[]string{"--algo", "telepathy"}, "--algo"},
		{[]string{"--executor", "threads"}, `--executor: want inproc or mp, got "threads"`},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--cpuprofile", "/nonexistent/cpu.pprof"}, "--cpuprofile: open /nonexistent/cpu.pprof"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"bench", "--model", "tiny", "--gen-len", "8"}, tc.args...)
			_, _, err := runCLI(t, args...)
			require.ErrorContains(t, err, tc.want)
			require.True(t, strings.HasPrefix(err.Error(), "bench: "), err.Error())
		})
	}
}
