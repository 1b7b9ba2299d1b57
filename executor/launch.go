//go:build linux

package executor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/shmring"
)

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
		exits: make(chan *ipc.Exit, n), failed: make(chan struct{}), stop: make(chan struct{})}
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
		if err != nil && !errors.As(err, new(*refusal)) { // a refusal is the cause of the refused worker's exit
			err = e.deathOr(err)
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
		if aerr := <-admitted; errors.As(aerr, new(*refusal)) {
			// a refused worker exits on its refusal, and its exit can be seen before the
			// refusal is: the refusal is the cause
			err = aerr
		}
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
	if cfg.StallAfter > 0 {
		e.watch.Go(e.watchStalls)
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
	w, err := shmring.NewWriter(e.ring.Uint64s(), rc, shmring.Waits{Timeout: e.cfg.StepTimeout, Abort: e.Err, Lag: e.cfg.ReplyLag})
	if err != nil {
		return err
	}
	e.steps = &DriverSteps{w: w, failed: e.Err, silenced: e.silenced}
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
		if err != nil { // the worker died, most likely: Launch waits for its exit
			c.Close()
			return fmt.Errorf("the handshake of pid %d: %w", pid, err)
		}
		hi, err := parseHello(m, pid)
		if err == nil {
			err = adm.admit(pid, hi)
		}
		if err != nil {
			_ = m.Close()
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
