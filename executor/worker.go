//go:build linux

package executor

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/shmring"
)

// Worker is a worker process's side of the executor: its rank, its connection to the
// driver and its end of the step ring.
type Worker struct {
	cfg     WorkerConfig
	driver  int // the driver's pid
	conn    *ipc.Conn
	hangups *ipc.Hangups
	node    *device.Node   // maps the driver's ring
	ring    *device.Buffer // the ring, mapped
	steps   *WorkerSteps
	gone    chan struct{} // closed when the driver hung up
	once    sync.Once
}

// Join joins the driver that started this process as cfg says. First it asks the kernel
// to kill this process when its parent dies (PR_SET_PDEATHSIG), then it checks that its
// parent is the driver it dialled: a driver that died before the request would never send
// the signal. It sends the handshake, and maps the step ring from the handle the driver
// answers with. From then on the driver's hangup (Close, or its death) ends every wait on
// the ring and closes Done. (The kernel sends the signal when the thread that forked this
// process exits; Go's runtime keeps its threads, except under a locked goroutine's exit.)
func Join(cfg WorkerConfig) (_ *Worker, err error) {
	w := &Worker{cfg: cfg, gone: make(chan struct{})}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("worker rank %d of %d: join: %w", cfg.Rank, cfg.World, err), w.Close())
		}
	}()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return nil, fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", err)
	}
	if w.conn, err = ipc.Dial(cfg.Socket); err != nil {
		return nil, err
	}
	w.driver = w.conn.Peer().Pid
	if ppid := os.Getppid(); ppid != w.driver {
		return nil, fmt.Errorf("the parent is pid %d, the driver pid %d: the driver died before this worker could ask to die with it, or another process started it", ppid, w.driver)
	}
	if err := w.conn.Send(hello{rank: cfg.Rank, world: cfg.World}.message()); err != nil {
		return nil, err
	}
	m, err := w.conn.Recv()
	switch {
	case err != nil:
		return nil, fmt.Errorf("waiting for the driver's welcome: %w", err)
	case m.Kind == kindRefused:
		return nil, fmt.Errorf("the driver refused it: %s", m.Body)
	case m.Kind != kindWelcome:
		_ = m.Close()
		return nil, fmt.Errorf("the driver answered the handshake with a message of kind %d", m.Kind)
	}
	if err := w.openRing(); err != nil {
		return nil, err
	}
	if w.hangups, err = ipc.WatchHangups([]*ipc.Conn{w.conn}, func(int) { w.driverHungUp() }); err != nil {
		return nil, err
	}
	return w, nil
}

// openRing maps the step ring from the handle that follows the welcome. The ring is the
// driver's memory, of no rank: it is mapped through device 1 of a node of the worker's own
// (device 0 being the driver's, which OpenPeer will not open as a peer's).
func (w *Worker) openRing() error {
	h, err := ipc.RecvHandle(w.conn)
	if err != nil {
		return err
	}
	defer h.Close()
	if w.node, err = device.NewNode(device.NodeConfig{Devices: 2, SMs: 1}); err != nil {
		return err
	}
	dev, err := w.node.Device(1)
	if err != nil {
		return err
	}
	if w.ring, err = (device.SharedMemory{}).Open(dev, h); err != nil {
		return err
	}
	r, err := shmring.NewReader(w.ring.Uint64s(), w.cfg.Rank, shmring.Waits{Abort: w.driverGone})
	if err != nil {
		return err
	}
	w.steps = &WorkerSteps{r: r}
	return nil
}

// driverHungUp is the hangup watcher's report: the driver closed the connection or died.
func (w *Worker) driverHungUp() {
	w.once.Do(func() { close(w.gone) })
	w.steps.r.Wake()
}

// driverGone is the ring's abort: an error once the driver hung up.
func (w *Worker) driverGone() error {
	select {
	case <-w.gone:
		return fmt.Errorf("the driver (pid %d) hung up", w.driver)
	default:
		return nil
	}
}

// Rank returns the worker's rank.
func (w *Worker) Rank() int { return w.cfg.Rank }

// Size returns the number of workers.
func (w *Worker) Size() int { return w.cfg.World }

// Conn returns the connection to the driver, for the control rounds of a job (the
// worker's side of Executor.Control, such as ipc.GatherHandles).
func (w *Worker) Conn() *ipc.Conn { return w.conn }

// Steps returns the worker's end of the step ring.
func (w *Worker) Steps() *WorkerSteps { return w.steps }

// Done is closed once the driver hung up: the job should return.
func (w *Worker) Done() <-chan struct{} { return w.gone }

// Close releases the connection and unmaps the ring.
func (w *Worker) Close() error {
	var errs []error
	if w.hangups != nil {
		errs = append(errs, w.hangups.Close())
	}
	if w.conn != nil {
		_ = w.conn.Close() // the driver may be gone: nothing to tell it
	}
	if w.ring != nil {
		errs = append(errs, (device.SharedMemory{}).Close(w.ring))
	}
	if w.node != nil {
		errs = append(errs, w.node.Close())
	}
	return errors.Join(errs...)
}

// Job is what a worker does once it joined, typically answering the driver's steps until
// the driver hangs up (Done), when it returns nil.
type Job func(w *Worker) error

// RunWorker joins the driver as cfg says and runs the job it names from jobs, the work of
// the hidden worker subcommand.
func RunWorker(cfg WorkerConfig, jobs map[string]Job) error {
	job, ok := jobs[cfg.Job]
	if !ok {
		return fmt.Errorf("worker rank %d: no job %q (jobs: %v)", cfg.Rank, cfg.Job, slices.Sorted(maps.Keys(jobs)))
	}
	w, err := Join(cfg)
	if err != nil {
		return err
	}
	err = job(w)
	if err != nil {
		err = fmt.Errorf("worker rank %d: job %q: %w", cfg.Rank, cfg.Job, err)
	}
	return errors.Join(err, w.Close())
}
