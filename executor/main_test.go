//go:build linux

package executor

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/stepwire"
	"github.com/tpslice/tpslice/internal/testutil"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
)

// The tests run real worker processes: Launch starts this test binary with the worker
// subcommand, as it starts tpslice, and TestMain runs it as the worker subcommand does,
// with the jobs of testJobs. A child started by testutil.ChildCommand plays a driver or a
// stranger instead.
const (
	lieVar      = "TPSLICE_TEST_LIE"      // a worker of this rank claims the next rank in its handshake
	strangerVar = "TPSLICE_TEST_STRANGER" // rank 0 has a process it started dial the socket first
	socketVar   = "TPSLICE_TEST_SOCKET"   // where the stranger dials
	memfdName   = "memfd:tpslice-device"
	exitLimit   = 10 * time.Second // bounds a wait for what should come at once
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerCommand {
		if err := runTestWorker(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "test worker: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if role := testutil.ChildRole(); role != "" {
		if err := runChild(role); err != nil {
			fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runTestWorker is the worker subcommand with the misbehaviours the tests ask for.
func runTestWorker(args []string) error {
	cfg, err := ParseWorkerArgs(args)
	if err != nil {
		return err
	}
	if lie := os.Getenv(lieVar); lie == strconv.Itoa(cfg.Rank) {
		cfg.Rank = (cfg.Rank + 1) % cfg.World
	}
	if os.Getenv(strangerVar) != "" && cfg.Rank == 0 {
		stranger := testutil.ChildCommand("stranger", socketVar+"="+cfg.Socket)
		if err := stranger.Run(); err != nil {
			return fmt.Errorf("the stranger: %w", err)
		}
	}
	return RunWorker(cfg, testJobs())
}

// testJobs are Jobs and jobs in which rank 1 dies at its first step: it exits with status
// 3 or panics; "hangup", whose rank 1 hangs up and sleeps; and "deaf", which ignores the
// driver's hangup; "busy", which computes a millisecond a token before it answers, and
// "blocked", which sleeps at its first step without answering.
func testJobs() map[string]Job {
	jobs := Jobs()
	dieAtFirstStep := func(die func()) Job {
		return func(w *Worker) error {
			if w.Rank() == 1 {
				if _, err := w.Steps().Next(); err != nil {
					return err
				}
				die()
			}
			return ping(w)
		}
	}
	jobs["exit3"] = dieAtFirstStep(func() { os.Exit(3) })
	jobs["panic"] = dieAtFirstStep(func() { panic("a worker's bug") })
	jobs["hangup"] = func(w *Worker) error { // rank 1 hangs up on the driver and lives on
		if w.Rank() == 1 {
			if err := w.Conn().Shutdown(); err != nil {
				return err
			}
			time.Sleep(time.Hour) // until Close kills it
		}
		return ping(w)
	}
	jobs["busy"] = func(w *Worker) error {
		for {
			step, err := w.Steps().Next()
			if err != nil {
				return nil // the driver hung up
			}
			for end := time.Now().Add(time.Duration(len(step.Forward.IDs)) * time.Millisecond); time.Now().Before(end); {
			}
			if err := w.Steps().Reply(pingReply(step, w.Rank())); err != nil {
				return nil
			}
		}
	}
	jobs["blocked"] = func(w *Worker) error {
		if _, err := w.Steps().Next(); err != nil {
			return err
		}
		time.Sleep(time.Hour) // until the driver kills it
		return nil
	}
	jobs["deaf"] = func(*Worker) error {
		time.Sleep(time.Hour) // until the kernel kills it
		return nil
	}
	return jobs
}

func runChild(role string) error {
	switch role {
	case "stranger": // dials the driver's socket and expects to be turned away
		c, err := ipc.Dial(os.Getenv(socketVar))
		if err != nil {
			return err
		}
		defer c.Close()
		if m, err := c.Recv(); err == nil {
			return fmt.Errorf("admitted: got message of kind %d", m.Kind)
		}
		return nil
	case "driver": // launches deaf workers, prints their pids and waits to be killed
		e, err := Launch(context.Background(), Config{Workers: 2, Job: "deaf"})
		if err != nil {
			return err
		}
		w := bufio.NewWriter(os.Stdout)
		for _, pid := range e.Pids() {
			fmt.Fprintln(w, pid)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		time.Sleep(time.Hour)
	}
	return fmt.Errorf("unknown role")
}

// launch starts workers of job and closes them when the test ends.
func launch(t *testing.T, cfg Config) *Executor {
	t.Helper()
	e, err := Launch(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// step is a step of n tokens of one sequence, its ids and positions drawn from number.
func step(number uint64, n int) stepwire.Step {
	s := stepwire.Step{Number: number, Forward: models.Step{Candidates: 1, Sample: []int{n - 1},
		Batch: layers.Batch{Seq: make([]int32, n), Tables: [][]int32{{int32(number % 7)}}}}}
	for i := range n {
		s.Forward.IDs = append(s.Forward.IDs, int32(number)*31+int32(i))
		s.Forward.Batch.Pos = append(s.Forward.Batch.Pos, int32(i))
	}
	return s
}

// roundTrip sends s and checks every worker's ping reply.
func roundTrip(t *testing.T, e *Executor, s stepwire.Step) error {
	t.Helper()
	if err := e.Steps().Send(s); err != nil {
		return err
	}
	replies, err := e.Steps().Gather()
	if err != nil {
		return err
	}
	require.Len(t, replies, e.World())
	for rank, r := range replies {
		require.Equal(t, pingReply(s, rank), r, "rank %d's reply to step %d", rank, s.Number)
	}
	return nil
}

// requireNothingLeft checks that the workers are reaped, the socket's directory is gone
// and nothing of the ring is mapped or open in this process.
func requireNothingLeft(t *testing.T, e *Executor) {
	t.Helper()
	for rank, pid := range e.Pids() {
		require.True(t, testutil.Reaped(pid), "rank %d (pid %d) is still in the process table", rank, pid)
	}
	_, err := os.Stat(e.dir)
	require.ErrorIs(t, err, os.ErrNotExist, "the socket's directory %s is left", e.dir)
	left, err := testutil.MemfdLeft(memfdName)
	require.NoError(t, err)
	require.Empty(t, left, "the ring's memory is still mapped or open")
}
