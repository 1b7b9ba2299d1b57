package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tpslice/tpslice/comm"
)

// collectiveMetrics exports the counts of the loaded engine's collectives: rank 0's (every
// rank issues the same collectives), from its flight recorder's running totals, which
// never drop a call; under --executor mp, rank 0's worker answers for them
// (engine.CollectiveStats).
type collectiveMetrics struct{ s *Server }

// collectiveCounter is an engine that counts its ranks' collectives wherever they run
// (*engine.Engine does); another engine's are read from its in-process group, if any.
type collectiveCounter interface {
	CollectiveStats() ([]comm.CollectiveStat, error)
}

var (
	collCallsDesc = prometheus.NewDesc("tpslice_collective_calls_total",
		"Collective calls per rank by op (allreduce, allreduce+rmsnorm, allgather) and algorithm.", []string{"op", "algorithm"}, nil)
	collBytesDesc = prometheus.NewDesc("tpslice_collective_bytes_total",
		"Bytes of the collective calls' messages per rank (the size S each rank contributes) by op and algorithm.", []string{"op", "algorithm"}, nil)
)

// Describe implements prometheus.Collector.
func (m collectiveMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- collCallsDesc
	ch <- collBytesDesc
}

// Collect implements prometheus.Collector.
func (m collectiveMetrics) Collect(ch chan<- prometheus.Metric) {
	l := m.s.eng.Load()
	if l == nil {
		return
	}
	var stats []comm.CollectiveStat
	if c, ok := l.e.(collectiveCounter); ok {
		var err error
		if stats, err = c.CollectiveStats(); err != nil { // a worker that died or is being respawned: the next scrape has them
			return
		}
	} else if g := l.e.Model().Group(); g != nil {
		stats = g.Comm().Recorder(0).Stats()
	}
	// A rebuilt TP group starts its counts again: a counter reset, as after a restart.
	for _, st := range stats {
		ch <- prometheus.MustNewConstMetric(collCallsDesc, prometheus.CounterValue, float64(st.Calls), st.Op, st.Algo.String())
		ch <- prometheus.MustNewConstMetric(collBytesDesc, prometheus.CounterValue, float64(st.Bytes), st.Op, st.Algo.String())
	}
}
