//go:build linux

package executor

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// gatherAsync sends step and gathers its answers on a goroutine of its own (FailNow must
// run on the test's), returning where the error arrives.
func gatherAsync(e *Executor, number uint64, tokens int) <-chan error {
	done := make(chan error, 1)
	go func() {
		err := e.Steps().Send(step(number, tokens))
		if err == nil {
			_, err = e.Steps().Gather()
		}
		done <- err
	}()
	return done
}

// TestWorkerStalled: a step nobody answers, as with one worker (no peer answers, so
// ReplyLag cannot bound it), ends about StallAfter after the worker went quiet when the
// worker is stopped (SIGSTOP) or blocked (asleep outside any collective): the error names
// its rank, pid and state from /proc, the worker is killed and every one is reaped.
func TestWorkerStalled(t *testing.T) {
	const stall = 300 * time.Millisecond
	for _, tc := range []struct {
		name, job string
		workers   int
		stop      bool
		state     string
	}{
		{"stopped/1 worker", "ping", 1, true, "T (stopped)"},
		{"stopped/2 workers", "ping", 2, true, "T (stopped)"},
		{"blocked/1 worker", "blocked", 1, false, "S (sleeping)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := launch(t, Config{Workers: tc.workers, Job: tc.job, StallAfter: stall, ReplyLag: time.Hour})
			if tc.stop {
				require.NoError(t, roundTrip(t, e, step(1, 4)))
				for r := range tc.workers {
					require.NoError(t, e.Signal(r, unix.SIGSTOP))
				}
			}
			start := time.Now()
			select {
			case err := <-gatherAsync(e, 2, 4):
				elapsed := time.Since(start)
				want := fmt.Sprintf("executor: worker rank 0 (pid %d) did not answer step 2, in state %s with no CPU time used for %v", e.Pids()[0], tc.state, stall)
				require.ErrorContains(t, err, want)
				require.ErrorContains(t, e.Err(), want, "the executor failed with it")
				require.GreaterOrEqual(t, elapsed, stall, "not before StallAfter")
				t.Logf("stalled worker named after %v", elapsed)
			case <-time.After(exitLimit):
				t.Fatal("the gather still waits on the stalled worker")
			}
			for r, pid := range e.Pids() {
				require.Eventually(t, func() bool { return !e.kids.Has(pid) }, exitLimit, time.Millisecond, "rank %d is killed and reaped", r)
			}
			require.NoError(t, e.Close())
			requireNothingLeft(t, e)
		})
	}
}

// TestWorkerBusyNotStalled: a worker that computes a step for many times StallAfter (a
// long prefill) uses CPU time all along and is not stalled: the step is answered.
//
// StallAfter is 400 ms, not the 100 ms of TestWorkerStalled: on two cores at load 7.5 a
// runnable worker went 100 ms without a tick of CPU time.
func TestWorkerBusyNotStalled(t *testing.T) {
	const stall = 400 * time.Millisecond
	e := launch(t, Config{Workers: 1, Job: "busy", StallAfter: stall})
	start := time.Now()
	require.NoError(t, roundTrip(t, e, step(1, 2000)), "2 s of computing, 5 times StallAfter")
	require.GreaterOrEqual(t, time.Since(start), 2000*time.Millisecond)
	require.NoError(t, e.Err())
	require.NoError(t, e.Close())
	requireNothingLeft(t, e)
}
