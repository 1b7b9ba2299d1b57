//go:build linux

package executor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/internal/ipc"
)

// stallChecks is how many times per Config.StallAfter the watch looks: a worker is first
// seen quiet up to one look after it went quiet and named at the first look StallAfter
// later, so between StallAfter and 1.25 StallAfter after its last sign of life.
const stallChecks = 8

// idleSince is what the watch last saw of one worker during one step: its CPU time, and
// since when it has been the same.
type idleSince struct {
	message uint64 // the ring message it was seen idle on (0: none)
	ticks   uint64
	since   time.Time
}

// watchStalls bounds a step nobody else bounds (Config.StallAfter): while a step is
// unanswered it reads each silent worker's /proc/<pid>/stat, and a worker that is not
// runnable and used no CPU time for StallAfter is stopped (SIGSTOP) or blocked outside
// its collectives, which would have ended its wait by then: it fails the executor
// (stalled). A worker that computes, however long, advances its CPU time; one that waits
// for a core is runnable: neither is stalled. Where a peer already answered and ReplyLag
// is set, Gather's lag bound names the silent ones, with what the peers answered. It runs
// until Close or the executor's failure.
func (e *Executor) watchStalls() {
	tick := time.NewTicker(e.cfg.StallAfter / stallChecks)
	defer tick.Stop()
	seen := make([]idleSince, len(e.pids))
	for {
		select {
		case <-e.stop:
			return
		case <-e.failed:
			return
		case <-tick.C:
		}
		message := e.steps.sent.Load()
		var silent []int
		for r := range e.pids {
			if message > 0 && e.steps.w.Replied(r) < message {
				silent = append(silent, r)
			}
		}
		if len(silent) == 0 || (e.cfg.ReplyLag > 0 && len(silent) < len(e.pids)) {
			continue // all answered, or Gather's lag bound runs
		}
		now := time.Now()
		var stalled []ipc.ProcStat
		for _, r := range silent {
			st, err := ipc.ReadProcStat(e.pids[r])
			if err != nil {
				continue // it exited: the poller reports how
			}
			s := &seen[r]
			if st.State == 'R' || s.message != message || s.ticks != st.CPUTicks {
				*s = idleSince{message: message, ticks: st.CPUTicks, since: now}
				continue
			}
			if now.Sub(s.since) >= e.cfg.StallAfter {
				stalled = append(stalled, st)
			}
		}
		if len(stalled) > 0 {
			e.stalled(stalled, e.steps.step.Load())
			return
		}
	}
}

// stalled fails the executor for the workers the stall watch found stopped or blocked on
// step, naming each one's rank, pid and state, and kills them (SIGKILL ends a stopped
// process too).
func (e *Executor) stalled(workers []ipc.ProcStat, step uint64) {
	names := make([]string, len(workers))
	for i, st := range workers {
		names[i] = fmt.Sprintf("rank %d (pid %d) did not answer step %d, in state %s with no CPU time used for %v",
			slices.Index(e.pids, st.Pid), st.Pid, step, st.StateName(), e.cfg.StallAfter)
	}
	e.fail(fmt.Errorf("executor: worker %s (stopped or blocked); killed", strings.Join(names, "; worker ")))
	for _, st := range workers {
		_ = e.Signal(slices.Index(e.pids, st.Pid), unix.SIGKILL) // it may have died meanwhile: its exit is reported all the same
	}
}
