package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// collectiveMetrics exports the counts of the loaded engine's collectives: rank 0's (every
// rank issues the same collectives), from its flight recorder's running totals, which
// never drop a call. Worker processes (--executor mp) keep their recorders: none then.
type collectiveMetrics struct{ s *Server }

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
	g := l.e.Model().Group()
	if g == nil { // the ranks run in worker processes
		return
	}
	// A rebuilt TP group starts its counts again: a counter reset, as after a restart.
	for _, st := range g.Comm().Recorder(0).Stats() {
		ch <- prometheus.MustNewConstMetric(collCallsDesc, prometheus.CounterValue, float64(st.Calls), st.Op, st.Algo.String())
		ch <- prometheus.MustNewConstMetric(collBytesDesc, prometheus.CounterValue, float64(st.Bytes), st.Op, st.Algo.String())
	}
}
