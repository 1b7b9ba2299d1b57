//go:build linux

package executor

import (
	"errors"
	"fmt"
	"time"

	"github.com/tpslice/tpslice/internal/ipc"
)

// Close asks every worker to exit (it hangs up their connections), waits up to
// cfg.ExitTimeout for them, kills the rest and reaps every one, and frees the ring. It
// returns an error naming the workers it had to kill.
func (e *Executor) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closing = true
		e.mu.Unlock()
		close(e.stop)
		e.watch.Wait()        // it reads the ring, which release frees
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
