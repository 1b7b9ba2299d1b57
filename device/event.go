package device

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Event marks a point in a stream's work. Streams wait on it to order work across streams
// (cudaStreamWaitEvent) and the host waits on it to learn a point was reached.
type Event struct {
	recorded atomic.Uint64 // generations handed out by Record

	// Under capture a record makes the event stand for the recording stream's last nodes
	// (the node's capMu guards these).
	captured      *capture
	capturedAfter []int

	mu        sync.Mutex
	cond      *sync.Cond
	completed uint64
	at        time.Time
}

// NewEvent creates an event that has never been recorded.
func NewEvent() *Event {
	e := &Event{}
	e.cond = sync.NewCond(&e.mu)
	return e
}

// Record enqueues the event on s: it completes when the work enqueued before it has run.
func (s *Stream) Record(e *Event) error {
	if s.captureRecord(e) {
		return nil
	}
	// Take the generation only once the enqueue cannot fail (stop needs the write lock), so a
	// Record refused by a closed stream does not leave the event pending forever.
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return fmt.Errorf("%v: %w", s, ErrStreamClosed)
	}
	s.ops <- op{kind: opRecord, event: e, gen: e.recorded.Add(1)}
	return nil
}

// WaitEvent makes work enqueued on s after this call wait until e's most recent Record (as
// of this call) completes. Waiting on an event that was never recorded is a no-op.
func (s *Stream) WaitEvent(e *Event) error {
	if captured, err := s.captureWait(e); captured || err != nil {
		return err
	}
	gen := e.recorded.Load()
	if gen == 0 {
		return nil
	}
	return s.enqueue(op{kind: opWait, event: e, gen: gen})
}

// Synchronize blocks the host until the event's most recent Record has completed.
func (e *Event) Synchronize() { e.wait(e.recorded.Load()) }

// Done reports whether the most recent Record has completed.
func (e *Event) Done() bool {
	gen := e.recorded.Load()
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.completed >= gen
}

// Elapsed returns the time between two completed events (cudaEventElapsedTime).
func Elapsed(start, end *Event) (time.Duration, error) {
	if start.recorded.Load() == 0 || end.recorded.Load() == 0 {
		return 0, fmt.Errorf("device: elapsed: both events must have been recorded")
	}
	if !start.Done() || !end.Done() {
		return 0, fmt.Errorf("device: elapsed: both events must have completed")
	}
	start.mu.Lock()
	t0 := start.at
	start.mu.Unlock()
	end.mu.Lock()
	defer end.mu.Unlock()
	return end.at.Sub(t0), nil
}

func (e *Event) complete(gen uint64) {
	e.mu.Lock()
	if gen > e.completed {
		e.completed, e.at = gen, time.Now()
	}
	e.cond.Broadcast()
	e.mu.Unlock()
}

func (e *Event) wait(gen uint64) {
	e.mu.Lock()
	for e.completed < gen {
		e.cond.Wait()
	}
	e.mu.Unlock()
}
