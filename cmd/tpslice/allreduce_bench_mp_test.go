//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/bench/collective"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/internal/testutil"
)

// mpBenchArgs is a short sweep: two sizes, every algorithm, one round.
var mpBenchArgs = []string{"allreduce-bench", "-g", "2,4", "-b", "1K", "-e", "64K", "-f", "64", "--algo", "all", "--check", "--json",
	"--select", "default", "--iters", "2", "--warmup", "1", "--rounds", "1", "--target", "1ms"}

// decodeReports reads the JSON objects allreduce-bench prints, one per world size.
func decodeReports(t *testing.T, out string) []collective.Report {
	t.Helper()
	var reps []collective.Report
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var r collective.Report
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			return reps
		}
		require.NoError(t, err)
		reps = append(reps, r)
	}
}

// requireNothingLeft: no child process and no shared memory of a rank is left here.
func requireNothingLeft(t *testing.T) {
	t.Helper()
	require.NoError(t, testutil.NothingLeft())
}

// TestAllreduceBenchProcesses runs allreduce-bench with a worker process per rank (this
// test binary's worker subcommand) at 2 and 4 ranks: every algorithm right under --check,
// the same rows and columns as with the ranks in this process, and nothing left behind.
func TestAllreduceBenchProcesses(t *testing.T) {
	out, _, err := runCLI(t, append(mpBenchArgs, "--executor", "mp")...)
	require.NoError(t, err)
	mp := decodeReports(t, out)
	requireNothingLeft(t)
	out, _, err = runCLI(t, append(mpBenchArgs, "--executor", "inproc")...)
	require.NoError(t, err)
	inproc := decodeReports(t, out)
	require.Len(t, mp, 2)
	require.Len(t, inproc, 2)
	for i, rep := range mp {
		want := inproc[i]
		require.Equal(t, want.Ranks, rep.Ranks)
		require.Equal(t, want.Selector, rep.Selector)
		require.Equal(t, "emulated", rep.NVLS)
		require.Len(t, rep.Rows, len(want.Rows))
		for j, row := range rep.Rows {
			require.Equal(t, want.Rows[j].SizeBytes, row.SizeBytes)
			require.Equal(t, want.Rows[j].Auto, row.Auto, "%d ranks, %d bytes", rep.Ranks, row.SizeBytes)
			require.Len(t, row.Results, len(want.Rows[j].Results))
			for k, res := range row.Results {
				require.Equal(t, want.Rows[j].Results[k].Algo, res.Algo)
				require.NotNil(t, res.Wrong)
				require.Zero(t, *res.Wrong, "%d ranks, %d bytes, %s", rep.Ranks, row.SizeBytes, res.Algo)
				require.Positive(t, res.TimeUS)
			}
		}
	}
}

// TestAllreduceBenchProcessesBlocking: --blocking (every call waited for before the next,
// its kernel on the worker's own thread where the stream is idle) gives every algorithm's
// right sums at 2 ranks in worker processes and in one.
func TestAllreduceBenchProcessesBlocking(t *testing.T) {
	for _, executor := range []string{"mp", "inproc"} {
		out, _, err := runCLI(t, append(mpBenchArgs, "-g", "2", "--blocking", "--executor", executor)...)
		require.NoError(t, err, executor)
		reps := decodeReports(t, out)
		require.Len(t, reps, 1)
		for _, row := range reps[0].Rows {
			for _, res := range row.Results {
				require.NotNil(t, res.Wrong)
				require.Zero(t, *res.Wrong, "%s: %d bytes, %s", executor, row.SizeBytes, res.Algo)
				require.Positive(t, res.TimeUS)
			}
		}
	}
	requireNothingLeft(t)
}

// TestAllreduceBenchProcessDies: a worker that exits mid-sweep (TPSLICE_FAULT kind:exit)
// fails the command with its rank, pid, exit status and last collective; the survivors'
// waits end at once (no worker had to be killed), and nothing is left behind.
func TestAllreduceBenchProcessDies(t *testing.T) {
	t.Setenv(comm.EnvFault, "rank:1,call:20,kind:exit")
	_, _, err := runCLI(t, "allreduce-bench", "--executor", "mp", "-g", "4", "-b", "1K", "-e", "64K", "-f", "8",
		"--algo", "oneshot,twoshot", "--rounds", "3", "--target", "1ms", "--timeout", "1m")
	require.Error(t, err)
	msg := err.Error()
	require.Regexp(t, `worker rank 1 \(pid \d+\) exited: exit status 86`, msg)
	require.Contains(t, msg, "comm: rank 1's process exited (last collective seq 19 allreduce f32")
	require.NotContains(t, msg, "did not exit", "a survivor waited for its deadline")
	require.Equal(t, 1, exitCode(err))
	requireNothingLeft(t)
}

// TestAllreduceBenchProcessesPinned: --cpu-affinity pins each rank's worker process to its
// list before it starts its threads, and the report says where each ran; a list count that
// is not the rank count, a CPU the machine lacks and pinning without worker processes are
// refused with errors that say so.
func TestAllreduceBenchProcessesPinned(t *testing.T) {
	args := append(mpBenchArgs, "-g", "2", "--executor", "mp")
	out, _, err := runCLI(t, append(args, "--cpu-affinity", "0|0")...)
	require.NoError(t, err)
	reps := decodeReports(t, out)
	require.Len(t, reps, 1)
	require.Equal(t, []string{"0", "0"}, reps[0].CPUs)
	out, _, err = runCLI(t, args...)
	require.NoError(t, err)
	require.Nil(t, decodeReports(t, out)[0].CPUs, "nothing pinned without --cpu-affinity")
	requireNothingLeft(t)

	_, _, err = runCLI(t, append(args, "--cpu-affinity", "0")...)
	require.ErrorContains(t, err, "--cpu-affinity gives 1 CPU lists for 2 ranks")
	_, _, err = runCLI(t, append(args, "--cpu-affinity", "0|1000")...)
	require.ErrorContains(t, err, "rank 1")
	requireNothingLeft(t)
	_, _, err = runCLI(t, append(mpBenchArgs, "-g", "2", "--executor", "inproc", "--cpu-affinity", "0|1")...)
	require.ErrorContains(t, err, "--cpu-affinity pins worker processes; use --executor mp")
}
