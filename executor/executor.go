//go:build linux

package executor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/shmring"
)

// hangupGrace is how long a worker's hangup waits for the pidfd's report of its exit
// before it fails the executor by itself: a process's sockets close just before it is
// reported dead, and the report carries the exit status.
const hangupGrace = 100 * time.Millisecond

// Executor is the driver's side of a group of worker processes, one per rank.
type Executor struct {
	cfg     Config
	kids    *ipc.Children
	pids    []int       // by rank; written by Launch before any worker can join
	conns   []*ipc.Conn // by rank; complete once Launch returns
	hangups *ipc.Hangups
	node    *device.Node   // the driver's host memory: its one device holds the ring
	ring    *device.Buffer // the step ring's shared memory
	steps   *DriverSteps
	dir     string         // the socket's directory, gone once Launch returns
	exits   chan *ipc.Exit // every worker's exit as the poller reports it; Close counts them
	control sync.Mutex     // control rounds take turns

	mu      sync.Mutex
	err     error         // the first worker that died or hung up
	failed  chan struct{} // closed when err is set
	closing bool          // Close asked the workers to exit: their exits are no failure

	closeOnce sync.Once
	closeErr  error
}

// Launch starts cfg.Workers worker processes running cfg.Job and returns once each has
// joined: dialled back, passed the credential check and the handshake, and mapped the step
// ring. A worker that dies or is refused, ctx's end, or cfg.JoinTimeout ends it with an
// error naming the worker; nothing it started is left then.
func Launch(ctx context.Context, cfg Config) (_ *Executor, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	n := cfg.Workers
	e := &Executor{cfg: cfg, pids: make([]int, n), conns: make([]*ipc.Conn, n),
		exits: make(chan *ipc.Exit, n), failed: make(chan struct{})}
	var ln *ipc.Listener
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("executor: launch of %d workers (job %q): %w", n, cfg.Job, err), e.release(ln))
		}
	}()
	if err = e.newRing(); err != nil {
		return nil, err
	}
	if e.kids, err = ipc.NewChildren(e.onExit); err != nil {
		return nil, err
	}
	if ln, err = ipc.Listen(e.kids.Has); err != nil {
		return nil, err
	}
	e.dir = filepath.Dir(ln.Path())
	adm := newAdmission(n)
	for r := range n {
		w := WorkerConfig{Job: cfg.Job, Rank: r, World: n, Socket: ln.Path()}
		cmd := exec.Command(cfg.Program, append([]string{WorkerCommand}, w.args()...)...)
		cmd.Env = append(cmd.Environ(), cfg.Env...)
		cmd.Stdout, cmd.Stderr = cfg.Output, cfg.Output
		pid, err := e.kids.Start(fmt.Sprintf("rank %d", r), cmd)
		if err != nil {
			return nil, err
		}
		e.pids[r], adm.rankOf[pid] = pid, r
	}
	admitted := make(chan error, 1)
	go func() { admitted <- e.admit(ln, adm) }()
	timeout := time.NewTimer(cfg.JoinTimeout)
	defer timeout.Stop()
	select {
	case err = <-admitted:
		var refused *refusal
		if err != nil && !errors.As(err, &refused) { // a refusal is the cause of the refused worker's exit
			return nil, e.deathOr(err)
		}
		if err != nil {
			return nil, err
		}
	case <-e.failed:
		err = e.Err()
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout.C:
		err = fmt.Errorf("ranks %v did not join within %v", e.missing(), cfg.JoinTimeout)
	}
	if err != nil { // end the admission: its Accept, and any Recv of a hello from a child
		_ = ln.Close()
		_ = e.kids.Close()
		<-admitted
		ln = nil
		return nil, err
	}
	if err = ln.Close(); err != nil { // every worker joined: the socket file goes
		return nil, err
	}
	ln = nil
	if e.hangups, err = ipc.WatchHangups(e.conns, e.onHangup); err != nil {
		return nil, err
	}
	return e, nil
}

// newRing allocates the step ring in shareable memory of the driver's own one-device node
// (the driver is no rank: the ring is its host memory) and formats it.
func (e *Executor) newRing() error {
	rc := e.cfg.ring()
	var err error
	if e.node, err = device.NewNode(device.NodeConfig{Devices: 1, SMs: 1}); err != nil {
		return err
	}
	dev, err := e.node.Device(0)
	if err != nil {
		return err
	}
	if e.ring, err = (device.SharedMemory{}).Alloc(dev, dtype.F32, 2*rc.Words()); err != nil {
		return err
	}
	w, err := shmring.NewWriter(e.ring.Uint64s(), rc, shmring.Waits{Timeout: e.cfg.StepTimeout, Abort: e.Err})
	if err != nil {
		return err
	}
	e.steps = &DriverSteps{w: w, failed: e.Err}
	return nil
}

// admit accepts connections until every worker joined. A process that is not one of the
// workers is turned away and noted in the log; a worker whose handshake is wrong is
// refused and ends the launch.
func (e *Executor) admit(ln *ipc.Listener, adm *admission) error {
	h, err := (device.SharedMemory{}).Export(e.ring)
	if err != nil {
		return err
	}
	defer h.Close()
	for joined := 0; joined < e.cfg.Workers; {
		c, err := ln.Accept()
		if errors.Is(err, ipc.ErrPeerRejected) {
			fmt.Fprintf(e.cfg.Log, "executor: refused a connection: %v\n", err)
			continue
		}
		if err != nil {
			return err
		}
		pid := c.Peer().Pid
		m, err := c.Recv()
		var hi hello
		if err == nil {
			hi, err = parseHello(m, pid)
		}
		if err == nil {
			err = adm.admit(pid, hi)
		}
		if err != nil {
			_ = c.Send(ipc.Message{Kind: kindRefused, Body: []byte(err.Error())})
			c.Close()
			return &refusal{err}
		}
		e.mu.Lock()
		e.conns[hi.rank] = c
		e.mu.Unlock()
		if err := c.Send(ipc.Message{Kind: kindWelcome}); err != nil {
			return err
		}
		if err := ipc.SendHandle(c, h); err != nil {
			return err
		}
		joined++
	}
	return nil
}

// refusal is the error of a worker's connection that admission refused.
type refusal struct{ err error }

func (r *refusal) Error() string { return "refused a worker: " + r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// missing lists the ranks that have not joined.
func (e *Executor) missing() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ranks []int
	for r, c := range e.conns {
		if c == nil {
			ranks = append(ranks, r)
		}
	}
	return ranks
}

// Steps returns the driver's end of the step ring.
func (e *Executor) Steps() *DriverSteps { return e.steps }

// World returns the number of workers.
func (e *Executor) World() int { return e.cfg.Workers }

// Pids returns the workers' process ids, by rank.
func (e *Executor) Pids() []int { return slices.Clone(e.pids) }

// Err returns the error of the first worker that died or hung up, naming its rank, pid and
// exit status or signal; nil while every worker lives.
func (e *Executor) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
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

// Close asks every worker to exit (it hangs up their connections), waits up to
// cfg.ExitTimeout for them, kills the rest and reaps every one, and frees the ring. It
// returns an error naming the workers it had to kill.
func (e *Executor) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closing = true
		e.mu.Unlock()
		_ = e.hangups.Close() // first: its duplicates of the sockets would keep them open
		for _, c := range e.conns {
			_ = c.Shutdown()
		}
		var errs []error
		if late := e.awaitExits(); len(late) > 0 {
			errs = append(errs, fmt.Errorf("executor: close: ranks %v did not exit within %v of the request; killed", late, e.cfg.ExitTimeout))
		}
		e.closeErr = errors.Join(append(errs, e.release(nil))...)
	})
	return e.closeErr
}

// awaitExits waits up to cfg.ExitTimeout for every worker's exit and returns the ranks
// still alive.
func (e *Executor) awaitExits() []int {
	timeout := time.NewTimer(e.cfg.ExitTimeout)
	defer timeout.Stop()
	for range e.cfg.Workers {
		select {
		case <-e.exits:
		case <-timeout.C:
			var late []int
			for r, pid := range e.pids {
				if e.kids.Has(pid) {
					late = append(late, r)
				}
			}
			return late
		}
	}
	return nil
}

// release kills and reaps the workers still alive and frees what Launch made: the
// listener and its directory (ln, if still open), the connections, the ring, the node.
func (e *Executor) release(ln *ipc.Listener) error {
	var errs []error
	if e.hangups != nil {
		errs = append(errs, e.hangups.Close())
	}
	if ln != nil {
		errs = append(errs, ln.Close())
	}
	if e.kids != nil {
		errs = append(errs, e.kids.Close())
	}
	e.mu.Lock()
	for _, c := range e.conns {
		if c != nil {
			_ = c.Close() // the peer is gone: only the descriptor is left to release
		}
	}
	e.mu.Unlock()
	if e.ring != nil {
		errs = append(errs, e.ring.Free())
	}
	if e.node != nil {
		errs = append(errs, e.node.Close())
	}
	return errors.Join(errs...)
}
