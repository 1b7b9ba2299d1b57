package engine

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/diag"
)

// ErrUnavailable is returned (wrapped) for requests while the engine rebuilds its TP group
// after a failed step, and for good once a rebuild failed; the server answers 503 with a
// Retry-After.
var ErrUnavailable = errors.New("engine: unavailable")

// ErrStepFailed is returned (wrapped, with the step's error) for the requests in flight in
// a step that failed; the engine rebuilds its TP group, so a retry can succeed.
var ErrStepFailed = errors.New("engine: a step of the TP group failed")

// flightCalls is how many of each rank's last collectives a failure logs.
const flightCalls = 8

// Recovery records one failed step and the rebuild after it.
type Recovery struct {
	// Err is the step's error: the rank, the op and the sequence number that failed, and
	// the flight recorder's last call of every rank.
	Err error
	// Detection is the time from the step's start to its error (at most the collective
	// deadline, CollectiveTimeout); Rebuild from the error to serving again (0 while the
	// rebuild runs).
	Detection, Rebuild time.Duration
	// InFlight counts the sequences of the failed step, which ended with its error.
	InFlight int
	// RebuildErr is why the TP group could not be rebuilt (the engine then serves no more).
	RebuildErr error
	// Flight is the failed group's flight recorder: each rank's last collectives.
	Flight comm.Flight
}

// health is why the engine does not serve now, and the failures it came through.
type health struct {
	mu         sync.Mutex
	err        error // nil while serving
	recoveries []Recovery
}

// Health returns nil while the engine serves, and otherwise why not, wrapping
// ErrUnavailable: a rebuild is under way, or a rebuild failed and the engine is done.
func (e *Engine) Health() error {
	e.health.mu.Lock()
	defer e.health.mu.Unlock()
	return e.health.err
}

// Recoveries returns the failed steps the engine went through, oldest first.
func (e *Engine) Recoveries() []Recovery {
	e.health.mu.Lock()
	defer e.health.mu.Unlock()
	return append([]Recovery(nil), e.health.recoveries...)
}

// Failed is closed when a rebuild failed: the engine serves no more, and its process
// should exit non-zero so that an orchestrator restarts it.
func (e *Engine) Failed() <-chan struct{} { return e.failed }

func (e *Engine) setHealth(err error) {
	e.health.mu.Lock()
	e.health.err = err
	e.health.mu.Unlock()
}

// recoverFrom handles a failed step, started at start, on the scheduler's goroutine: the
// engine turns unavailable, the step's sequences end with its error, and the TP group is
// torn down and built again from the checkpoint; sequences still queued wait for it. It
// reports false when the rebuild failed: queued sequences then end with the error, and
// Failed is closed.
func (e *Engine) recoverFrom(inFlight []*sequence, start time.Time, err error) bool {
	rec := Recovery{Err: err, Detection: time.Since(start), InFlight: len(inFlight), Flight: e.Flight(flightCalls)}
	failedAt := time.Now()
	lines := firstLines(err)
	first, _, _ := strings.Cut(strings.TrimSpace(lines), "\n")
	e.setHealth(fmt.Errorf("%w: rebuilding the TP group after a failed step: %s", ErrUnavailable, first))
	d := e.cfg.Debug
	d.Warnf(diag.Fault, "step failed after %v (%d of its sequences end with it):\n%s", rec.Detection, len(inFlight), lines)
	d.Warnf(diag.Fault, "flight recorder, the last %d collectives of every rank:\n%v", flightCalls, rec.Flight)
	e.fail(inFlight, err)
	e.sched.mu.Lock()
	e.sched.stats.StepFailures++
	e.sched.mu.Unlock()
	e.blocks.ForgetCache() // the KV cache they describe goes with the old group
	e.health.mu.Lock()
	e.health.recoveries = append(e.health.recoveries, rec) // Rebuild is 0 until it is done
	e.health.mu.Unlock()
	if e.cfg.BeforeRebuild != nil {
		e.cfg.BeforeRebuild()
	}
	rec.RebuildErr = e.rebuild()
	rec.Rebuild = time.Since(failedAt)
	e.health.mu.Lock()
	e.health.recoveries[len(e.health.recoveries)-1] = rec
	rebuilds := len(e.health.recoveries)
	e.health.mu.Unlock()
	if rec.RebuildErr != nil {
		e.setHealth(fmt.Errorf("%w: the TP group could not be rebuilt after a failed step: %v", ErrUnavailable, rec.RebuildErr))
		d.Warnf(diag.Fault, "rebuild failed after %v: %v", rec.Rebuild, rec.RebuildErr)
		close(e.failed)
		return false
	}
	d.Warnf(diag.Fault, "TP group rebuilt in %v; serving again", rec.Rebuild)
	e.logStartup(rebuilds)
	e.setHealth(nil)
	return true
}

// rebuild frees the model and the TP group of a failed step and builds them again from the
// checkpoint's weights; the tokenizer, no part of the group, stays as it is.
func (e *Engine) rebuild() error {
	_ = e.closeModel() // a failed communicator closes without waiting on its peers
	_, src, err := openWeights(e.cfg)
	if err != nil {
		return err
	}
	defer src.Close()
	return e.build(src)
}

// Flight returns the flight recorder's last calls of every rank (0: all it holds), what
// GET /debug/flight and SIGUSR1 dump.
func (e *Engine) Flight(last int) comm.Flight {
	m := e.Model()
	if g := m.Group(); g != nil {
		return g.Comm().Flight(last)
	}
	// The ranks' recorders live in the worker processes: each one's last collective, as
	// its control buffer holds it (procModel).
	if w, ok := m.(interface{ Flight() comm.Flight }); ok {
		return w.Flight()
	}
	return comm.Flight{}
}

// firstLines is the first line of each error err joins (each rank's, from tp.Group.Run),
// indented, without the flight recorder's table that each of them carries.
func firstLines(err error) string {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var b strings.Builder
	for _, e := range errs {
		line, _, _ := strings.Cut(e.Error(), "\n")
		fmt.Fprintf(&b, "  %s\n", line)
	}
	return b.String()
}
