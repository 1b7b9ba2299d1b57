//go:build linux

package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/testutil"
)

// TestSteps broadcasts 10,000 small steps and a few large ones (split over hundreds of
// slots) to three workers and checks every reply; Close then finds every worker gone of
// its own accord (it exits when the driver hangs up) and leaves nothing behind.
func TestSteps(t *testing.T) {
	e := launch(t, Config{Workers: 3, Job: "ping"})
	_, err := os.Stat(e.dir)
	require.ErrorIs(t, err, os.ErrNotExist, "the socket's directory goes once every worker joined")
	for i := range 10_000 {
		require.NoError(t, roundTrip(t, e, step(uint64(i), 1+i%300)), "step %d", i)
	}
	for i, n := range []int{100_000, 1, 300_000, 50_000} {
		require.NoError(t, roundTrip(t, e, step(uint64(10_000+i), n)), "large step %d of %d tokens", i, n)
	}
	require.NoError(t, e.Err())
	require.NoError(t, e.Close(), "every worker exits when asked, none is killed")
	requireNothingLeft(t, e)
}

// TestLaunchCloseCycles launches and closes small groups back to back.
func TestLaunchCloseCycles(t *testing.T) {
	for i := range 3 {
		e, err := Launch(context.Background(), Config{Workers: 1 + i%2, Job: "ping"})
		require.NoError(t, err, "cycle %d", i)
		require.NoError(t, roundTrip(t, e, step(uint64(i), 8)))
		require.NoError(t, e.Close(), "cycle %d", i)
		requireNothingLeft(t, e)
	}
}

// TestWorkerDeath kills rank 1 of two while the driver streams steps, three ways: the
// driver's gather ends with an error that names the rank, its pid and how it died, at the
// death and not at a deadline (the step timeout is a minute), and the survivor exits.
func TestWorkerDeath(t *testing.T) {
	for _, tc := range []struct {
		name, job, how string
		kill           bool
	}{
		{"SIGKILL", "ping", "signal: killed", true},
		{"exit status", "exit3", "exit status 3", false},
		{"panic", "panic", "exit status 2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			output, err := os.CreateTemp(t.TempDir(), "workers")
			require.NoError(t, err)
			defer output.Close()
			e := launch(t, Config{Workers: 2, Job: tc.job, StepTimeout: time.Minute, Output: output})

			var killed time.Time
			for i := 0; err == nil; i++ {
				if i == 50 && tc.kill {
					killed = time.Now()
					require.NoError(t, e.Signal(1, unix.SIGKILL))
				}
				err = roundTrip(t, e, step(uint64(i), 16))
			}
			if tc.kill {
				t.Logf("SIGKILL to the gather's error: %v", time.Since(killed))
			}
			dead := fmt.Sprintf("rank 1 (pid %d) exited: %s", e.Pids()[1], tc.how)
			require.ErrorIs(t, err, device.ErrAborted, "the wait ends at the death, not at its deadline")
			require.ErrorContains(t, err, dead)
			require.EqualError(t, e.Err(), "executor: worker "+dead)
			var exit *ipc.Exit
			require.ErrorAs(t, e.Err(), &exit)
			require.Equal(t, e.Pids()[1], exit.Pid)
			require.ErrorIs(t, e.Steps().Send(step(1<<20, 1)), e.Err(), "a failed group takes no more steps")
			require.NoError(t, e.Close(), "the survivor exits of its own accord")
			requireNothingLeft(t, e)
			if tc.job == "panic" {
				said, err := os.ReadFile(output.Name())
				require.NoError(t, err)
				require.Contains(t, string(said), "panic: a worker's bug")
			}
		})
	}
}

// TestWorkerHangsUp: a worker that hangs up its connection and lives on fails the group,
// named; the failure hangs up rank 0, which exits; Close, which rank 1 does not obey,
// kills it and says so.
func TestWorkerHangsUp(t *testing.T) {
	e := launch(t, Config{Workers: 2, Job: "hangup", ExitTimeout: 100 * time.Millisecond})
	select {
	case <-e.Failed():
	case <-time.After(exitLimit):
		t.Fatal("rank 1's hangup was not noticed")
	}
	require.EqualError(t, e.Err(), fmt.Sprintf("executor: worker rank 1 (pid %d) hung up its connection to the driver", e.Pids()[1]))
	for deadline := time.Now().Add(exitLimit); !testutil.Reaped(e.Pids()[0]); time.Sleep(time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "rank 0 lives on after the failure hung it up")
	}
	require.EqualError(t, e.Close(), "executor: close: ranks [1] did not exit within 100ms of the request; killed")
	requireNothingLeft(t, e)
}

// TestControlRoundEndsAtDeath: a control round waiting on rank 0, which will never send,
// ends as soon as rank 1 dies, with rank 1's death.
func TestControlRoundEndsAtDeath(t *testing.T) {
	e := launch(t, Config{Workers: 2, Job: "ping"})
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		done <- e.Control(func(conns []*ipc.Conn) error {
			close(started)
			_, err := conns[0].Recv()
			return err
		})
	}()
	<-started
	require.NoError(t, e.Signal(1, unix.SIGKILL))
	select {
	case err := <-done:
		require.ErrorContains(t, err, fmt.Sprintf("executor: worker rank 1 (pid %d) exited: signal: killed", e.Pids()[1]))
	case <-time.After(exitLimit):
		t.Fatal("the control round still waits on rank 0 after rank 1 died")
	}
	require.Error(t, e.Control(func([]*ipc.Conn) error { return nil }), "a failed group runs no more rounds")
	require.NoError(t, e.Close())
	requireNothingLeft(t, e)
}

// TestLaunchRefusesWrongRank: a worker whose handshake names another rank than it was
// started as is refused, and the launch fails naming it, leaving nothing.
func TestLaunchRefusesWrongRank(t *testing.T) {
	kids := childrenNow(t)
	_, err := Launch(context.Background(), Config{Workers: 2, Job: "ping", Env: []string{lieVar + "=1"}, Output: devNull(t)})
	require.ErrorContains(t, err, `executor: launch of 2 workers (job "ping"): refused a worker: pid `)
	require.ErrorContains(t, err, ", started as rank 1, says it is rank 0")
	require.Equal(t, kids, childrenNow(t), "a failed launch leaves no child")
}

// TestLaunchRefusesStranger: a process the driver did not start (rank 0's child) dials the
// socket first; it is turned away and noted with its pid, and the workers still join.
func TestLaunchRefusesStranger(t *testing.T) {
	var log testutil.SyncBuffer
	e := launch(t, Config{Workers: 2, Job: "ping", Env: []string{strangerVar + "=1"}, Log: &log})
	require.Contains(t, log.String(), "executor: refused a connection: ipc: accept: peer pid ")
	require.Contains(t, log.String(), "is not a process this one started: peer rejected")
	require.NoError(t, roundTrip(t, e, step(1, 4)))
}

// TestLaunchFailures: a bad config is refused before any process starts; a worker that
// cannot run its job fails the launch with its exit.
func TestLaunchFailures(t *testing.T) {
	_, err := Launch(context.Background(), Config{Workers: 0, Job: "ping"})
	require.EqualError(t, err, "executor: 0 workers, want 1 to 8")
	_, err = Launch(context.Background(), Config{Workers: 2})
	require.EqualError(t, err, "executor: no job named for the workers")
	kids := childrenNow(t)
	_, err = Launch(context.Background(), Config{Workers: 2, Job: "nope", Output: devNull(t)})
	require.ErrorContains(t, err, `executor: launch of 2 workers (job "nope"): executor: worker rank `)
	require.ErrorContains(t, err, "exited: exit status 1")
	require.Equal(t, kids, childrenNow(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Launch(ctx, Config{Workers: 1, Job: "ping"})
	require.ErrorIs(t, err, context.Canceled)
}

// TestDriverDeathTakesWorkers SIGKILLs a driver process whose workers ignore the hangup:
// the kernel kills them (PR_SET_PDEATHSIG), and this process, their subreaper, reaps them.
func TestDriverDeathTakesWorkers(t *testing.T) {
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	driver := testutil.ChildCommand("driver")
	out, err := driver.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, driver.Start())
	var pids [2]int
	_, err = fmt.Fscan(out, &pids[0], &pids[1])
	require.NoError(t, err, "the driver's workers' pids")
	killed := time.Now()
	require.NoError(t, driver.Process.Kill())
	require.Error(t, driver.Wait())
	for _, pid := range pids {
		ws := reap(t, pid)
		require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "worker pid %d ended %v, want killed by the kernel", pid, ws)
	}
	t.Logf("driver SIGKILLed to both workers reaped: %v", time.Since(killed))
}

// reap waits for the orphaned pid, now this process's child, and reaps it.
func reap(t *testing.T, pid int) unix.WaitStatus {
	t.Helper()
	deadline := time.Now().Add(exitLimit)
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil:
			t.Fatalf("wait for pid %d: %v", pid, err)
		case got == pid:
			return ws
		case time.Now().After(deadline):
			_ = unix.Kill(pid, unix.SIGKILL) // not left for init when the test fails
			_, _ = unix.Wait4(pid, &ws, 0, nil)
			t.Fatalf("worker pid %d outlives its driver", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// childrenNow lists this process's children from /proc.
func childrenNow(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/children", os.Getpid()))
	require.NoError(t, err)
	return string(b)
}

func devNull(t *testing.T) *os.File {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// BenchmarkStepRoundTrip broadcasts a batch-16 decode step (512 tokens of context) to n
// ping workers and gathers their replies, as a decode step's host side will.
func BenchmarkStepRoundTrip(b *testing.B) {
	s := step(1, 16)
	s.Forward.Batch.Seq, s.Forward.Batch.Tables, s.Forward.Sample = nil, nil, nil
	for i := range 16 { // a table of 32 blocks per token, a greedy row per token
		s.Forward.Batch.Tables = append(s.Forward.Batch.Tables, make([]int32, 32))
		s.Forward.Sample = append(s.Forward.Sample, i)
	}
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			e, err := Launch(context.Background(), Config{Workers: n, Job: "ping"})
			require.NoError(b, err)
			defer e.Close()
			for b.Loop() {
				if err := e.Steps().Send(s); err != nil {
					b.Fatal(err)
				}
				if _, err := e.Steps().Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWorkerStopped: a worker that stops (SIGSTOP: alive, silent) while its peers answer
// a step ends the gather ReplyLag after the first answer with an error naming its rank and
// pid, instead of a wait forever; the executor fails, the stopped worker is killed and
// every worker is reaped.
func TestWorkerStopped(t *testing.T) {
	const lag = 200 * time.Millisecond
	e := launch(t, Config{Workers: 3, Job: "ping", ReplyLag: lag})
	require.NoError(t, roundTrip(t, e, step(1, 4)))
	require.NoError(t, e.Signal(1, unix.SIGSTOP))
	done := make(chan error, 1)
	go func() { // no require here: FailNow must run on the test's goroutine
		err := e.Steps().Send(step(2, 4))
		if err == nil {
			_, err = e.Steps().Gather()
		}
		done <- err
	}()
	select {
	case err := <-done:
		want := fmt.Sprintf("executor: worker rank 1 (pid %d) did not answer step 2 within %v of the first answer (stopped or hung); killed", e.Pids()[1], lag)
		require.ErrorContains(t, err, want)
		require.ErrorContains(t, e.Err(), want, "the executor failed with it")
	case <-time.After(exitLimit):
		t.Fatal("the gather still waits on the stopped worker")
	}
	require.Eventually(t, func() bool { return testutil.Reaped(e.Pids()[1]) }, exitLimit, time.Millisecond, "the stopped worker is killed")
	require.NoError(t, e.Close())
	requireNothingLeft(t, e)
}
