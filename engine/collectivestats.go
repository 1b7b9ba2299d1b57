package engine

import (
	"errors"

	"github.com/tpslice/tpslice/comm"
)

// collectiveCounter is a Model whose ranks run in worker processes, which keep their
// collectives' counts and answer for rank 0.
type collectiveCounter interface {
	collectiveStats() ([]comm.CollectiveStat, error)
}

// CollectiveStats returns rank 0's collective calls and bytes by op and algorithm since the
// group was built (every rank issues the same collectives; a rebuilt group counts from
// zero again), from its flight recorder's running totals, which never drop a call. In-process
// ranks are read here; a worker process (Config.Processes) is asked over its control
// connection, so /metrics reports the same series under both executors.
func (e *Engine) CollectiveStats() ([]comm.CollectiveStat, error) {
	m := e.Model()
	if c, ok := m.(collectiveCounter); ok {
		return c.collectiveStats()
	}
	g := m.Group()
	if g == nil {
		return nil, errors.New("engine: the model has no TP group whose collectives to count")
	}
	return g.Comm().Recorder(0).Stats(), nil
}
