//go:build linux

package server

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/internal/testutil"
)

// workerPids returns the worker processes of an engine with Processes, by rank.
func workerPids(e *engine.Engine) []int { return e.Model().(interface{ Pids() []int }).Pids() }

// TestRecoveryWorkerDies: a worker process (--executor mp) that dies while clients stream
// and wait for completions over HTTP, at TP 1, 2, 4 and 8, killed with a real SIGKILL or
// ending itself through TPSLICE_FAULT kind:exit (from TP 2: it counts collectives): the
// failed step's error names its rank, pid and how it ended within a second. A worker
// stopped with SIGSTOP (alive, silent) is named within about two collective deadlines
// (its peers' collectives time out, then the driver gives it one more; at TP 1, with no
// peer, once it used no CPU time for two) and killed. The engine respawns every worker through its rebuild
// (engine/recover.go) while /health answers 503, and then serves again with the same
// greedy text; no client call is lost, only the failed step's requests fail, the queued
// ones are answered. The fault fires once: the respawned workers do not read it again.
// Once the engine is closed no worker, mapping of their shared memory or socket file is
// left.
func TestRecoveryWorkerDies(t *testing.T) {
	if testing.Short() {
		t.Skip("worker deaths × TP under load: skipped with -short")
	}
	const timeout = time.Second
	type fault struct {
		tp  int
		how string
	}
	faults := []fault{{1, "kill"}, {1, "stop"}} // TP 1 has no collective for kind:exit to count
	for _, tp := range []int{2, 4, 8} {
		for _, how := range []string{"kill", "exit", "stop"} {
			faults = append(faults, fault{tp, how})
		}
	}
	for _, f := range faults {
		tp, how := f.tp, f.how
		t.Run(fmt.Sprintf("tp%d/%s", tp, how), func(t *testing.T) {
			victim := tp - 1
			t.Setenv("TMPDIR", t.TempDir()) // where the executor makes its socket's directory
			if how == "exit" {              // 12 tokens are 13 steps of 6 collectives: a few steps into the load
				t.Setenv(comm.EnvFault, fmt.Sprintf("rank:%d,call:%d,kind:exit", victim, 13*6+30))
			}
			hold := newRebuildHold()
			e, err := engine.New(engine.Config{Model: "tiny", TP: tp, MaxRunning: 4, CollectiveTimeout: timeout,
				Processes: true, BeforeRebuild: hold.hook})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			ts := start(t, Config{}, e)
			t.Cleanup(hold.release) // runs first: a failed test must not leave the engine held
			first := workerPids(e)
			load := newRecoveryLoad(ts)
			want, _, status, err := load.ask(false)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status)
			load.run(8, want)
			var died time.Time
			exited := exitTime(t, first[victim])
			if how != "exit" {
				require.Eventually(t, func() bool { return load.ok.Load() >= 4 }, 20*time.Second, time.Millisecond, "answers before the signal")
				sig := map[string]unix.Signal{"kill": unix.SIGKILL, "stop": unix.SIGSTOP}[how]
				died = time.Now()
				require.NoError(t, unix.Kill(first[victim], sig))
			}
			hold.await(t, 20*time.Second)
			if how == "exit" { // the worker ends itself: date its death by its pidfd
				select {
				case died = <-exited:
				case <-time.After(20 * time.Second):
					t.Fatalf("rank %d (pid %d) did not exit", victim, first[victim])
				}
			}
			detected := hold.at.Sub(died) // from the death (or the signal) to the rebuild
			load.requireRefusedWhileRebuilding(t)
			hold.release()
			rec := load.requireServesAgain(t, e, want)
			t.Logf("| %s | %d | %v | %v | %v | %v |", how, tp, detected.Round(time.Millisecond), rec.Detection.Round(time.Millisecond), rec.Rebuild.Round(time.Millisecond), load)
			ended := map[string]string{"kill": "exited: signal: killed", "exit": fmt.Sprint("exited: exit status ", comm.FaultExitStatus),
				"stop": "did not answer step"}[how]
			if how != "stop" {
				require.Contains(t, rec.Err.Error(), fmt.Sprintf("comm: rank %d's process exited (last collective seq ", victim))
			}
			require.Regexp(t, fmt.Sprintf(`rank %d \(pid %d\) %s`, victim, first[victim], ended), rec.Err.Error())
			switch how {
			case "stop":
				// Peers time out and answer, then the driver waits one more deadline; with no
				// peer, the worker is stalled two deadlines after it went quiet.
				require.Less(t, detected, 2*timeout+2*time.Second, "from the stop to the rebuild")
				if tp == 1 {
					require.Contains(t, rec.Err.Error(), "in state T (stopped)")
				}
			default: // the step's start to its error (rec.Detection) adds the step's work before the death, long on a loaded machine
				require.Less(t, detected, time.Second, "from the %s to the rebuild", how)
			}
			again := workerPids(e)
			require.Len(t, again, tp)
			for rank, pid := range first {
				require.True(t, testutil.Reaped(pid), "rank %d of the failed group (pid %d) is reaped", rank, pid)
				require.False(t, slices.Contains(again, pid))
			}
			require.NoError(t, e.Close())
			requireNoWorkerLeft(t, again)
		})
	}
}

// requireNoWorkerLeft checks what a closed engine with worker processes leaves: no child
// process (pids among them, reaped), no mapping or descriptor of shared device memory in
// this process, and no socket directory under $TMPDIR.
func requireNoWorkerLeft(t *testing.T, pids []int) {
	t.Helper()
	for rank, pid := range pids {
		require.True(t, testutil.Reaped(pid), "rank %d (pid %d) is reaped", rank, pid)
	}
	require.NoError(t, testutil.NothingLeft())
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), "*"))
	require.NoError(t, err)
	require.Empty(t, dirs, "nothing is left in %s, where the socket's directory was", os.TempDir())
}

// TestServeProcessesLeaveNothing: a server whose engine runs worker processes leaves no
// socket file once the workers joined, and nothing once it shut down and the engine
// closed: no worker, no mapping of their shared memory, no socket directory.
func TestServeProcessesLeaveNothing(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	e, err := engine.New(engine.Config{Model: "tiny", TP: 2, Processes: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	ts := start(t, Config{}, e)
	pids := workerPids(e)
	left, err := filepath.Glob(filepath.Join(os.TempDir(), "*"))
	require.NoError(t, err)
	require.Empty(t, left, "the socket's directory goes once every worker joined")
	resp, body := ts.post(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 4, "stream": true})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.NoError(t, ts.Shutdown(t.Context()))
	require.NoError(t, e.Close())
	requireNoWorkerLeft(t, pids)
}

// exitTime sends the time pid's process ends, as its pidfd turns readable (a worker that
// ends itself has no signal to date its death by).
func exitTime(t *testing.T, pid int) <-chan time.Time {
	fd, err := unix.PidfdOpen(pid, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	at := make(chan time.Time, 1)
	go func() {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				at <- time.Now()
				return
			}
		}
	}()
	return at
}
