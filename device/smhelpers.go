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
	// job announces the stream's launches: their count since the stream started times
	// jobHelpers, plus how many helpers the latest one wants (helpers i < that run its
	// blocks). One word, so that a helper never pairs one launch's number with another's
	// count; the launch itself is the stream's cur.
	job    atomic.Uint64
	closed atomic.Bool
	idle   doorbell // helpers wait here for a job
	done   doorbell // the stream waits here for its helpers to finish a job
	exited sync.WaitGroup
}

// jobHelpers is how job packs a launch: seq·jobHelpers + helpers, helpers < jobHelpers.
const jobHelpers = 1 << 16

// maxSMs is the most SMs a device may have: a stream's helpers must fit in job.
const maxSMs = jobHelpers

// startHelpers starts the stream's n helpers, each of which reports on pinned whether it
// could be pinned to the device's CPUs.
func (s *Stream) startHelpers(n int, pinned chan<- error) {
	s.help.idle.init()
	s.help.done.init()
	for i := range n {
		s.help.exited.Go(func() {
			pinned <- s.pinWorker()
			s.helper(i)
		})
	}
}

// stopHelpers ends the helpers, which are idle, and waits until they have returned.
func (s *Stream) stopHelpers() {
	s.help.closed.Store(true)
	s.help.idle.ring()
	s.help.exited.Wait()
}

// helper is helper i's life: wait for a launch, run its blocks if the launch wants i. A
// launch that wants i waits for i, so i sees it before the stream moves on and reuses cur;
// one that does not, i may miss, and it reads nothing of it but job.
func (s *Stream) helper(i int) {
	var last uint64
	for {
		job, ok := s.help.await(last)
		if !ok {
			return
		}
		last = job
		if i < int(job%jobHelpers) {
			s.share(&s.cur, &s.cur.kernel)
			if s.cur.left.Add(-1) == 0 {
				s.help.done.ring()
			}
		}
	}
}

// await returns the first job other than last, or false once the helpers are closed.
func (h *smHelpers) await(last uint64) (job uint64, ok bool) {
	poll := func() bool {
		job = h.job.Load()
		return job != last || h.closed.Load()
	}
	h.idle.wait(poll)
	return job, !h.closed.Load()
}

// runOnHelpers runs k on the stream's goroutine and on helpers helpers, which read it from
// the launch's copy, and returns when all of them are done.
func (s *Stream) runOnHelpers(l *launch, k *Kernel, helpers int) {
	l.kernel = *k
	l.left.Store(int32(helpers))
	seq := s.help.job.Load()/jobHelpers + 1
	s.help.job.Store(seq*jobHelpers + uint64(helpers))
	s.help.idle.ring()
	s.share(l, &l.kernel)
	s.help.done.wait(func() bool { return l.left.Load() == 0 })
	l.kernel = Kernel{} // its closures would otherwise stay alive until the next such launch
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
