//go:build linux

package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/tp"
)

// probeStart asks a worker to install a probe; probeStop to remove it and answer question.
type (
	probeStart struct{ Name string }
	probeStop  struct{ Question json.RawMessage }
)

// probeRank is ProbeRank for ranks in worker processes: a control round to rank's worker
// starts the probe and waits until it is installed, so every step after it is watched.
func (m *procModel) probeRank(rank int, name string) (func(question, answer any) error, error) {
	pid := m.e.Pids()[rank]
	fail := func(what string, err error) error {
		return fmt.Errorf("engine: rank %d (pid %d): %s probe %q: %w", rank, pid, what, name, err)
	}
	err := m.e.Control(func(conns []*ipc.Conn) error {
		if err := ipc.SendJSON(conns[rank], kindProbeStart, probeStart{Name: name}); err != nil {
			return err
		}
		return ipc.RecvJSON(conns[rank], kindProbeStart, kindRankFailed, &struct{}{})
	})
	if err != nil {
		return nil, fail("starting", err)
	}
	var once sync.Once
	return func(question, answer any) error {
		err := errors.New("already stopped")
		once.Do(func() {
			var q []byte
			if q, err = json.Marshal(question); err != nil {
				return
			}
			err = m.e.Control(func(conns []*ipc.Conn) error {
				if err := ipc.SendJSON(conns[rank], kindProbeStop, probeStop{Question: q}); err != nil {
					return err
				}
				var raw json.RawMessage
				if err := ipc.RecvJSON(conns[rank], kindProbeStop, kindRankFailed, &raw); err != nil {
					return err
				}
				return json.Unmarshal(raw, answer)
			})
		})
		if err != nil {
			return fail("stopping", err)
		}
		return nil
	}, nil
}

// probeServer is a worker's side of ProbeRank and of CollectiveStats: once its rank is
// ready, the control connection carries only these requests, which serve answers until the
// driver hangs up.
type probeServer struct {
	conn   *ipc.Conn
	sends  *sync.Mutex // serve's sends and RankJob's last word take turns
	g      *tp.Group
	rank   int
	probes RankProbes
	active RankProbe
}

// serve answers requests until the connection ends (the driver hung up).
func (s *probeServer) serve() {
	for {
		m, err := s.conn.Recv()
		if err != nil {
			return
		}
		_ = m.Close()
		kind, body, err := s.handle(m)
		if err != nil {
			kind, body = kindRankFailed, []byte(err.Error())
		}
		s.sends.Lock()
		err = s.conn.Send(ipc.Message{Kind: kind, Body: body})
		s.sends.Unlock()
		if err != nil && kind != kindRankFailed { // an answer too large for a message, say
			s.sends.Lock()
			_ = s.conn.Send(ipc.Message{Kind: kindRankFailed, Body: []byte(err.Error())})
			s.sends.Unlock()
		}
	}
}

// handle runs one request and returns the answer's kind and JSON body.
func (s *probeServer) handle(m ipc.Message) (uint32, []byte, error) {
	switch m.Kind {
	case kindProbeStart:
		var req probeStart
		if err := json.Unmarshal(m.Body, &req); err != nil {
			return 0, nil, fmt.Errorf("probe start: %w", err)
		}
		mk, ok := s.probes[req.Name]
		switch {
		case s.active != nil:
			return 0, nil, fmt.Errorf("a probe already watches rank %d", s.rank)
		case !ok:
			return 0, nil, fmt.Errorf("rank %d's worker has no probe %q (it has %q)", s.rank, req.Name, slices.Sorted(maps.Keys(s.probes)))
		}
		s.active = mk(s.g, s.rank)
		s.g.Node().SetTracer(s.active)
		return kindProbeStart, []byte("{}"), nil
	case kindProbeStop:
		var req probeStop
		if err := json.Unmarshal(m.Body, &req); err != nil {
			return 0, nil, fmt.Errorf("probe stop: %w", err)
		}
		if s.active == nil {
			return 0, nil, fmt.Errorf("no probe watches rank %d", s.rank)
		}
		s.g.Node().SetTracer(nil)
		p := s.active
		s.active = nil
		answer, err := p.Answer(req.Question)
		if err != nil {
			return 0, nil, err
		}
		body, err := json.Marshal(answer)
		return kindProbeStop, body, err
	case kindCollectiveStats:
		body, err := json.Marshal(s.g.Comm().Recorder(s.rank).Stats())
		return kindCollectiveStats, body, err
	}
	return 0, nil, fmt.Errorf("rank %d's worker got a control message of kind %d, want a probe's (%d or %d) or its collective counts' (%d)",
		s.rank, m.Kind, kindProbeStart, kindProbeStop, kindCollectiveStats)
}

// statsWait bounds how long CollectiveStats waits for rank 0's worker to answer: a scrape
// of /metrics must not hang on a worker that is stopped while the engine is idle.
const statsWait = 2 * time.Second

// collectiveStats is CollectiveStats for ranks in worker processes: a control round asks
// rank 0's worker for its recorder's running totals. The round runs on to its answer (or
// the executor's end) after statsWait gives up on it, holding the control connection, so
// that no later round reads its late answer; until then a new request is refused.
func (m *procModel) collectiveStats() ([]comm.CollectiveStat, error) {
	pid := m.e.Pids()[0]
	if !m.asking.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("engine: rank 0 (pid %d) has not yet answered the last request for its collective counts", pid)
	}
	type answer struct {
		stats []comm.CollectiveStat
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		defer m.asking.Store(false)
		var a answer
		a.err = m.e.Control(func(conns []*ipc.Conn) error {
			if err := ipc.SendJSON(conns[0], kindCollectiveStats, struct{}{}); err != nil {
				return err
			}
			return ipc.RecvJSON(conns[0], kindCollectiveStats, kindRankFailed, &a.stats)
		})
		done <- a
	}()
	select {
	case a := <-done:
		if a.err != nil {
			return nil, fmt.Errorf("engine: rank 0 (pid %d): collective counts: %w", pid, a.err)
		}
		return a.stats, nil
	case <-time.After(statsWait):
		return nil, fmt.Errorf("engine: rank 0 (pid %d) did not answer for its collective counts within %v", pid, statsWait)
	}
}
