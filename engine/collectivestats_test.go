//go:build linux

package engine

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/internal/ipc"
)

// TestCollectiveStatsExecutors: one request generated alone issues the same collectives
// whichever executor runs the ranks, so rank 0's counts read the same, call for call and
// byte for byte, from the driver's own group and from rank 0's worker process.
func TestCollectiveStatsExecutors(t *testing.T) {
	counts := map[bool][]comm.CollectiveStat{}
	for _, processes := range []bool{false, true} {
		e, err := New(Config{Model: "tiny", TP: 2, Processes: processes})
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.Close() })
		_, err = e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 9, IgnoreEOS: true}, func(Token) error { return nil })
		require.NoError(t, err)
		stats, err := e.CollectiveStats()
		require.NoError(t, err)
		require.NotEmpty(t, stats, "processes %v", processes)
		counts[processes] = stats
		require.NoError(t, e.Close())
	}
	require.ElementsMatch(t, counts[false], counts[true])
}

// TestCollectiveStatsWorkerStopped: asking a stopped rank 0's worker for its counts (a
// /metrics scrape while the engine is idle) gives up after statsWait with an error naming
// it, not a hang; a second ask is refused at once while the first still waits, and once the
// worker runs again it answers.
func TestCollectiveStatsWorkerStopped(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 1, Processes: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	pid := e.Model().(interface{ Pids() []int }).Pids()[0]
	require.NoError(t, unix.Kill(pid, unix.SIGSTOP))
	requireStopped(t, pid)
	start := time.Now()
	_, err = e.CollectiveStats()
	require.ErrorContains(t, err, "did not answer for its collective counts within")
	require.Less(t, time.Since(start), statsWait+5*time.Second)
	_, err = e.CollectiveStats()
	require.ErrorContains(t, err, "has not yet answered the last request")
	require.NoError(t, unix.Kill(pid, unix.SIGCONT))
	require.Eventually(t, func() bool { _, err := e.CollectiveStats(); return err == nil }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, e.Close())
}

// requireStopped waits until every thread of pid is stopped. kill(2) returns with SIGSTOP
// pending, and until the thread the kernel chose dequeues it, another thread of the worker
// (the one reading the control socket, say) may still run and answer.
func requireStopped(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return false
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				return false
			}
			s, err := ipc.ReadProcStat(tid)
			if err != nil || s.State != 'T' {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "pid %d's threads did not all stop", pid)
}
