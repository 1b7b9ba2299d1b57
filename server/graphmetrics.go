package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// graphMetrics exports how many decode steps replayed each batch bucket's captured graph,
// as vLLM reports its CUDA graph use: a step run eagerly answers the same, so this is
// what shows the graphs serve.
type graphMetrics struct{ s *Server }

// graphReporter is an engine that counts its decode graph replays per batch bucket
// (*engine.Engine does).
type graphReporter interface {
	DecodeGraphReplays() map[int]int64
}

var graphReplaysDesc = prometheus.NewDesc("tpslice_decode_graph_replays_total",
	"Decode steps replayed from the captured graph of each batch bucket (the padded batch size); other steps run eagerly.",
	[]string{"batch"}, nil)

// Describe implements prometheus.Collector.
func (m graphMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- graphReplaysDesc }

// Collect implements prometheus.Collector.
func (m graphMetrics) Collect(ch chan<- prometheus.Metric) {
	l := m.s.eng.Load()
	if l == nil {
		return
	}
	gr, ok := l.e.(graphReporter)
	if !ok {
		return
	}
	// A rebuilt TP group captures its graphs anew and starts their counts again: a counter
	// reset, as after a restart.
	for bucket, n := range gr.DecodeGraphReplays() {
		ch <- prometheus.MustNewConstMetric(graphReplaysDesc, prometheus.CounterValue, float64(n), strconv.Itoa(bucket))
	}
}
