package device

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// helperSpin is how long an idle SM helper polls for its stream's next kernel before it
// blocks. A step's kernels follow one another within microseconds, while waking a blocked
// thread costs tens of them on a VM (the idle core has to be woken first), and a kernel
// whose second SM starts late runs on one SM until it does.
const helperSpin = 200 * time.Microsecond

// smHelpers are the budget-1 goroutines that run a stream's kernel blocks beside the
// stream's own goroutine. They start with the stream and live as long as it does, as a
// GPU's SMs are there before a kernel launches: a launch hands them its blocks instead of
// starting goroutines that the scheduler then has to place on a woken core.
type smHelpers struct {
	job    atomic.Pointer[launch] // the kernel being handed out; a new pointer per launch
	closed atomic.Bool
	idle   doorbell // helpers wait here for a job
	done   doorbell // the stream waits here for its helpers to finish a job
	exited sync.WaitGroup
}

// startHelpers starts the stream's n helpers.
func (s *Stream) startHelpers(n int) {
	s.help.idle.init()
	s.help.done.init()
	for i := range n {
		s.help.exited.Go(func() { s.helper(i) })
	}
}

// stopHelpers ends the helpers, which are idle, and waits until they have returned.
func (s *Stream) stopHelpers() {
	s.help.closed.Store(true)
	s.help.idle.ring()
	s.help.exited.Wait()
}

// helper is helper i's life: wait for a launch, run its blocks if the launch wants i.
func (s *Stream) helper(i int) {
	var last *launch
	for {
		l := s.help.await(last)
		if l == nil {
			return
		}
		last = l
		if i < l.helpers {
			s.share(l)
			if l.left.Add(-1) == 0 {
				s.help.done.ring()
			}
		}
	}
}

// await returns the first launch other than last, or nil once the helpers are closed.
func (h *smHelpers) await(last *launch) *launch {
	var l *launch
	poll := func() bool {
		l = h.job.Load()
		return l != last || h.closed.Load()
	}
	h.idle.wait(poll)
	if h.closed.Load() {
		return nil
	}
	return l
}

// runOnHelpers runs l's kernel on the stream's goroutine and on l.helpers helpers, and
// returns when all of them are done.
func (s *Stream) runOnHelpers(l *launch) {
	l.left.Store(int32(l.helpers))
	s.help.job.Store(l)
	s.help.idle.ring()
	s.share(l)
	s.help.done.wait(func() bool { return l.left.Load() == 0 })
}

// wait returns once ready() is true: it polls for helperSpin, yielding between polls so a
// goroutine with work can run, then blocks until the bell rings.
func (b *doorbell) wait(ready func() bool) {
	for start := time.Now(); time.Since(start) < helperSpin; {
		if ready() {
			return
		}
		runtime.Gosched()
	}
	b.sleep(ready)
}
