//go:build linux

package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/internal/testutil"
	"github.com/tpslice/tpslice/topo"
)

// processRequests are seededRequests, one whose penalties and bias move its tokens on
// stories260K (seededRequests' penalized one draws what it draws without them), and one
// that asks for logprobs with its top 3.
func processRequests() []Request {
	return append(seededRequests(),
		Request{Prompt: "Tim", MaxTokens: 12, IgnoreEOS: true, Sampling: Sampling{Temperature: 0.8, Seed: 7,
			FrequencyPenalty: 1.5, RepetitionPenalty: 1.5, LogitBias: map[int32]float32{300: 3}}},
		Request{Prompt: "Lily", MaxTokens: 12, IgnoreEOS: true, Logprobs: true, TopLogprobs: 3,
			Sampling: Sampling{Temperature: 0.9, Seed: 6, RepetitionPenalty: 1.2}})
}

// generateAll runs every request alone, then all of them batched, on a new engine of cfg
// and closes it; replays counts the decode steps that replayed a graph.
func generateAll(t *testing.T, cfg Config, reqs []Request) (alone, batched []Result, replays int64) {
	t.Helper()
	e, err := New(cfg)
	require.NoError(t, err)
	defer func() {
		for _, n := range e.DecodeGraphReplays() {
			replays += n
		}
		require.NoError(t, e.Close())
	}()
	for _, r := range reqs {
		res, err := e.Generate(context.Background(), r, func(Token) error { return nil })
		require.NoError(t, err)
		alone = append(alone, res)
	}
	batched, err = e.GenerateBatch(context.Background(), reqs, func(int, Token) error { return nil })
	require.NoError(t, err)
	return alone, batched, 0
}

// TestProcessesGenerateSameAsInProcess: with a worker process per rank (Processes, the
// CLI's --executor mp) every request gives the ids and logprobs it gives with the ranks in
// this process, alone and batched, at TP 1, 2, 4 and 8, on the embedded stories260K and
// on quantized GGUFs: the workers load their own shards, apply the samplers to them and
// send their rows, and the driver's Pick chooses from them as it does in one process.
// Decode steps replay each worker's graphs (counted from the workers' replies), eager
// workers give the same tokens. A worker that skipped its rank's logit adjustments, or
// sent another rank's rows, changes a token.
func TestProcessesGenerateSameAsInProcess(t *testing.T) {
	models := []string{"stories260K", "../../shared/testdata/quant/tiny-Q4_K_M.gguf", tinyGGUF}
	degrees := []int{1, 2, 4, 8}
	if testing.Short() {
		models, degrees = models[:2], []int{1, 2, 8}
	}
	for _, model := range models {
		t.Run(filepath.Base(model), func(t *testing.T) {
			if filepath.Ext(model) == ".gguf" {
				if _, err := os.Stat(model); err != nil {
					t.Skipf("shared test data not available (%v); it lives in ../shared next to the repository", err)
				}
			}
			reqs := processRequests()
			for _, tp := range degrees {
				cfg := Config{Model: filepath.Clean(model), TP: tp, NoPrefixCaching: true, MaxRunning: 8}
				wantAlone, wantBatched, _ := generateAll(t, cfg, reqs)
				cfg.Processes = true
				gotAlone, gotBatched, replays := generateAll(t, cfg, reqs)
				require.Positive(t, replays, "TP %d: the workers replay their decode graphs", tp)
				if tp == degrees[0] { // eager workers give the same tokens and replay nothing
					cfg.Eager = true
					eagerAlone, _, eagerReplays := generateAll(t, cfg, reqs)
					require.Zero(t, eagerReplays)
					for i := range reqs {
						require.Equal(t, wantAlone[i].OutputIDs, eagerAlone[i].OutputIDs, "eager, request %d", i)
					}
				}
				for i := range reqs {
					require.Equal(t, wantAlone[i].OutputIDs, gotAlone[i].OutputIDs, "TP %d, request %d alone", tp, i)
					require.Equal(t, wantBatched[i].OutputIDs, gotBatched[i].OutputIDs, "TP %d, request %d batched", tp, i)
					require.Equal(t, wantAlone[i].Logprobs, gotAlone[i].Logprobs, "TP %d, request %d's logprobs", tp, i)
				}
				require.NotEmpty(t, gotAlone[len(reqs)-1].Logprobs)
			}
		})
	}
}

// TestProcessesWorkerKilled: a worker killed while the engine generates fails the request
// with an error naming its rank, its pid and the signal, within seconds, not a hang; Close
// then leaves no worker process behind (the rebuild's included).
func TestProcessesWorkerKilled(t *testing.T) {
	e, err := New(Config{Model: "stories260K", TP: 4, Processes: true})
	require.NoError(t, err)
	pids := e.Model().(interface{ Pids() []int }).Pids()
	victim := pids[2]
	tokens := 0
	start := time.Now()
	_, err = e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 200, IgnoreEOS: true},
		func(Token) error {
			if tokens++; tokens == 5 {
				require.NoError(t, unix.Kill(victim, unix.SIGKILL))
			}
			return nil
		})
	require.Error(t, err)
	require.Less(t, time.Since(start), 20*time.Second)
	require.Regexp(t, `rank 2 \(pid `+fmt.Sprint(victim)+`\).*killed`, err.Error())
	require.Regexp(t, `comm: rank 2's process exited \(last collective seq \d+ \w+`, err.Error(), "named from its control buffer")
	// The step's sequences end before the scheduler records the recovery (recoverFrom).
	require.Eventually(t, func() bool { return len(e.Recoveries()) == 1 }, 10*time.Second, time.Millisecond, "the recovery is recorded")
	recs := e.Recoveries()
	require.Len(t, recs[0].Flight.Ranks, len(pids), "the failed group's flight recorder")
	for r, calls := range recs[0].Flight.Ranks {
		require.Len(t, calls, 1, "rank %d's last collective, as the driver sees it", r)
	}
	rebuilt := e.Model().(interface{ Pids() []int }).Pids()
	require.NoError(t, e.Close())
	for _, pid := range append(pids, rebuilt...) {
		require.Eventually(t, func() bool { return testutil.Reaped(pid) }, 10*time.Second, 10*time.Millisecond, "worker pid %d", pid)
	}
}

// TestProcessesWorkerDiesLoading: a worker that dies while the model loads fails New with
// its rank, pid and exit status, and leaves no worker behind.
func TestProcessesWorkerDiesLoading(t *testing.T) {
	t.Setenv(dieLoadingVar, "1")
	_, err := New(Config{Model: "stories260K", TP: 2, Processes: true})
	require.Error(t, err)
	require.Regexp(t, `rank 1 \(pid \d+\) exited: exit status 3`, err.Error())
	require.Eventually(t, func() bool {
		kids, err := testutil.ChildPids()
		return err == nil && len(kids) == 0
	}, 10*time.Second, 10*time.Millisecond, "no worker process is left")
}

// TestProcessesPinnedRanks: with a CPU list per rank, each worker pins its rank there, as
// one process pins its ranks (TestPinnedRanks): some threads of worker r may run only on
// rank r's CPU, none only on the other rank's, and the tokens are the unpinned ones.
func TestProcessesPinnedRanks(t *testing.T) {
	allowed, err := topo.AllowedCPUs()
	if err != nil || len(allowed) < 2 {
		t.Skipf("pinning two ranks a CPU each needs two allowed CPUs (allowed %v, %v)", allowed, err)
	}
	ids := map[bool][]int32{}
	for _, pin := range []bool{true, false} {
		aff := topo.Affinity{None: true}
		if pin {
			aff = topo.Affinity{Lists: []topo.CPUList{{allowed[0]}, {allowed[1]}}}
		}
		e, err := New(Config{Model: "tiny", TP: 2, MaxRunning: 2, Processes: true, CPUAffinity: aff})
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.Close() })
		for r, pid := range e.Model().(interface{ Pids() []int }).Pids() {
			only := threadsOnlyOn(t, pid)
			if !pin {
				require.Empty(t, only, "rank %d: no thread pinned", r)
				continue
			}
			require.NotZero(t, only[fmt.Sprint(allowed[r])], "rank %d's threads pinned to its CPU %d: %v", r, allowed[r], only)
			require.Zero(t, only[fmt.Sprint(allowed[1-r])], "rank %d's threads pinned to rank %d's CPU: %v", r, 1-r, only)
		}
		res, err := e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 8}, func(Token) error { return nil })
		require.NoError(t, err)
		ids[pin] = res.OutputIDs
	}
	require.Equal(t, ids[false], ids[true], "pinning changes where the ranks run, not what they compute")
}

// threadsOnlyOn counts the threads of process pid by the CPU list they may run on, among
// those allowed fewer than every online CPU.
func threadsOnlyOn(t *testing.T, pid int) map[string]int {
	t.Helper()
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	require.NoError(t, err)
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	require.NoError(t, err)
	require.NotEmpty(t, tasks)
	only := map[string]int{}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if list, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				if list = strings.TrimSpace(list); list != strings.TrimSpace(string(online)) {
					only[list]++
				}
			}
		}
	}
	return only
}

// TestProcessesWorkerStopped: a worker stopped (SIGSTOP: alive, silent) while the engine
// generates fails the request within about two collective deadlines (its peer's collective
// times out and answers, then the driver waits one more for the stopped one) with an error
// naming its rank and pid, not a hang; the rebuild kills it and respawns the workers, and
// the engine generates again.
func TestProcessesWorkerStopped(t *testing.T) {
	const timeout = time.Second
	e, err := New(Config{Model: "stories260K", TP: 2, Processes: true, CollectiveTimeout: timeout})
	require.NoError(t, err)
	pids := e.Model().(interface{ Pids() []int }).Pids()
	var stopped time.Time
	tokens := 0
	_, err = e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 200, IgnoreEOS: true},
		func(Token) error {
			if tokens++; tokens == 5 {
				stopped = time.Now()
				require.NoError(t, unix.Kill(pids[1], unix.SIGSTOP))
			}
			return nil
		})
	require.ErrorIs(t, err, ErrStepFailed)
	require.Less(t, time.Since(stopped), 2*timeout+2*time.Second, "detected about two collective deadlines after the stop")
	t.Logf("SIGSTOP to the request's error: %v", time.Since(stopped))
	require.Regexp(t, fmt.Sprintf(`rank 1 \(pid %d\) did not answer step \d+ within %v`, pids[1], timeout), err.Error())
	require.Regexp(t, `the others answered:\n  rank 0: .* rank\(s\) \[1\] did not arrive within 1s`, err.Error(), "the survivor's answer names the rank it waited for")
	require.Eventually(t, func() bool { return len(e.Recoveries()) == 1 && e.Health() == nil }, 20*time.Second, 10*time.Millisecond, "rebuilt")
	for _, pid := range pids {
		require.True(t, testutil.Reaped(pid), "worker pid %d of the failed group is reaped", pid)
	}
	res, err := e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 8}, func(Token) error { return nil })
	require.NoError(t, err)
	require.Len(t, res.OutputIDs, 8)
	rebuilt := e.Model().(interface{ Pids() []int }).Pids()
	require.NoError(t, e.Close())
	for _, pid := range rebuilt {
		require.Eventually(t, func() bool { return testutil.Reaped(pid) }, 10*time.Second, 10*time.Millisecond, "worker pid %d", pid)
	}
}
