//go:build linux

package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/bench/decode"
	"github.com/tpslice/tpslice/internal/testutil"
)

// benchReport runs bench with args and --json and returns its report.
func benchReport(t *testing.T, args ...string) decode.Report {
	t.Helper()
	out, stderr, err := runCLI(t, append([]string{"bench", "--json"}, args...)...)
	require.NoError(t, err, stderr)
	var rep decode.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	return rep
}

// TestBenchExecutorMP: bench --executor mp (a worker process per rank) at TP 2 reports
// every row as complete as in-process does: the batch's tokens (the same count), the
// latencies, and rank 0's kernel breakdown traced in its worker process (every class, the
// all-reduce of each call site, the collectives' share and its wait on peers); the table
// says the ranks ran as processes; no worker is left.
func TestBenchExecutorMP(t *testing.T) {
	args := []string{"--model", "stories260K", "--tp", "2", "--batch", "1,4", "--prompt-len", "4", "--gen-len", "12"}
	in := benchReport(t, append(args, "--executor", "inproc")...)
	mp := benchReport(t, append(args, "--executor", "mp")...)
	require.Equal(t, in.WeightBytes, mp.WeightBytes)
	require.Len(t, mp.Rows, len(in.Rows))
	for i, r := range mp.Rows {
		want := in.Rows[i]
		require.Equal(t, [2]int{want.TP, want.Batch}, [2]int{r.TP, r.Batch})
		require.Equal(t, want.OutputTokens, r.OutputTokens, "batch %d: the same tokens decoded", r.Batch)
		require.Equal(t, r.Batch*12, r.OutputTokens, "batch %d", r.Batch)
		for _, v := range []float64{r.TTFTMs, r.PromptTokensPerS, r.P50Ms, r.TokensPerS, r.E2ETokensPerS, r.CommShare} {
			require.Positive(t, v, "batch %d: %+v", r.Batch, r)
		}
		require.GreaterOrEqual(t, r.P99Ms, r.P50Ms)
		require.Positive(t, r.CommWaitShare, "batch %d: rank 0's waits on its peer, from its worker's flight records", r.Batch)
		require.LessOrEqual(t, r.CommWaitShare, r.CommShare)
		require.Less(t, r.CommShare, 1.0)
		for _, k := range append(decode.Classes(), decode.HostOverhead) {
			require.Contains(t, r.Breakdown, k, "batch %d", r.Batch)
		}
		require.Positive(t, r.Breakdown["gemm"], "batch %d: rank 0's GEMMs, from its worker", r.Batch)
		require.Equal(t, want.AllReduce, r.AllReduce, "batch %d: the same collective at each call site", r.Batch)
		for _, site := range []string{"after embedding", "after o_proj", "after down_proj"} {
			require.Contains(t, r.AllReduce[site], "allreduce", "batch %d: %v", r.Batch, r.AllReduce)
			require.Positive(t, r.Breakdown[r.AllReduce[site]], "batch %d: %s", r.Batch, r.AllReduce[site])
		}
	}

	out, _, err := runCLI(t, "bench", "--model", "stories260K", "--tp", "2", "--batch", "2", "--prompt-len", "4", "--gen-len", "8", "--executor", "mp")
	require.NoError(t, err)
	require.Contains(t, out, "; a worker process per rank (--executor mp), rank 0's kernels traced in its worker")
	row := strings.Fields(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	require.Equal(t, []string{"2", "2"}, row[:2])
	require.Eventually(t, func() bool {
		kids, err := testutil.ChildPids()
		return err == nil && len(kids) == 0
	}, 10*time.Second, 10*time.Millisecond, "no worker process is left")
}
