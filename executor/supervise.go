//go:build linux

package executor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/shmring"
)

// hangupGrace is how long a worker's hangup waits for the pidfd's report of its exit
// before it fails the executor by itself: a process's sockets close just before it is
// reported dead, and the report carries the exit status.
const hangupGrace = 100 * time.Millisecond

// Err returns the error of the first worker that died or hung up, naming its rank, pid and
// exit status or signal; nil while every worker lives.
func (e *Executor) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// DeadRank returns the rank of the worker whose death failed the executor (Err), or -1
// while none died (a worker that only hung up has no exit to name).
func (e *Executor) DeadRank() int {
	var exit *ipc.Exit
	if !errors.As(e.Err(), &exit) {
		return -1
	}
	return slices.Index(e.pids, exit.Pid)
}

// Failed is closed once a worker died or hung up (Err).
func (e *Executor) Failed() <-chan struct{} { return e.failed }

// Signal sends sig to the worker of rank through its pidfd (a SIGSTOP to hang it in a
// test, a SIGKILL to kill it).
func (e *Executor) Signal(rank int, sig unix.Signal) error {
	if rank < 0 || rank >= len(e.pids) {
		return fmt.Errorf("executor: signal %v to rank %d of %d", sig, rank, len(e.pids))
	}
	return e.kids.Signal(e.pids[rank], sig)
}

// Control runs round over the workers' connections, by rank: an exchange that every worker
// takes part in at once, such as ipc.RelayGather serving the all-gather of memory handles
// that joins a communicator across processes. Rounds take turns. A worker's death ends the
// round at once (its connections are hung up) with Err.
func (e *Executor) Control(round func(conns []*ipc.Conn) error) error {
	e.control.Lock()
	defer e.control.Unlock()
	if err := e.Err(); err != nil {
		return err
	}
	if err := round(e.conns); err != nil {
		return e.deathOr(fmt.Errorf("executor: control round: %w", err))
	}
	return nil
}

// deathOr returns the death that caused err, if one is reported within hangupGrace (a dead
// worker's socket closes before its exit is reported); else err.
func (e *Executor) deathOr(err error) error {
	select {
	case <-e.failed:
		return fmt.Errorf("%w (%v)", e.Err(), err)
	case <-time.After(hangupGrace):
		return err
	}
}

// silenced fails the executor for the workers that did not answer step within ReplyLag of
// the first answer, naming each one's rank and pid and what the others answered (their
// errors), and kills them (SIGKILL ends a stopped process too), as a death would have
// ended them; it returns the failure.
func (e *Executor) silenced(s *shmring.SilentError, step uint64, answers []string) error {
	names := make([]string, len(s.Readers))
	for i, r := range s.Readers {
		names[i] = fmt.Sprintf("rank %d (pid %d)", r, e.pids[r])
	}
	err := fmt.Errorf("executor: worker %s did not answer step %d within %v of the first answer (stopped or hung); killed",
		strings.Join(names, ", "), step, s.Lag)
	if len(answers) > 0 {
		err = fmt.Errorf("%w; the others answered:\n  %s", err, strings.Join(answers, "\n  "))
	}
	e.fail(err)
	for _, r := range s.Readers {
		_ = e.Signal(r, unix.SIGKILL) // it may have died meanwhile: its exit is reported all the same
	}
	return e.Err() // this, unless a death was reported first
}

// onExit is the poller's report of a worker's exit: unless Close asked for it, it fails
// the executor.
func (e *Executor) onExit(x *ipc.Exit) {
	e.exits <- x // buffered for every worker: never blocks the poller
	e.fail(fmt.Errorf("executor: worker %w", x))
}

// onHangup is the hangup watcher's report that rank's connection closed. The worker's exit
// normally follows within milliseconds and names its status; a worker that hung up and
// lives fails the executor after hangupGrace.
func (e *Executor) onHangup(rank int) {
	time.AfterFunc(hangupGrace, func() {
		e.fail(fmt.Errorf("executor: worker rank %d (pid %d) hung up its connection to the driver", rank, e.pids[rank]))
	})
}

// fail records the first failure, ends every wait on the ring (which reads Err as its
// abort) and hangs up every connection: a control round in flight ends, and the surviving
// workers exit, since a group with a dead rank cannot run another step. Once Close asked
// the workers to exit, their exits are no failure. It holds mu throughout (a ring and a few
// shutdowns, no wait), so that Close, which sets closing under mu, frees nothing it uses.
func (e *Executor) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil || e.closing {
		return
	}
	e.err = err
	close(e.failed)
	e.steps.w.Wake()
	for _, c := range e.conns {
		if c != nil {
			_ = c.Shutdown()
		}
	}
}
