package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/tpslice/tpslice/engine"
)

// metrics are the server's Prometheus metrics, in a registry of its own.
type metrics struct {
	requests         *prometheus.CounterVec
	ttft, tpot, e2e  prometheus.Histogram
	running, waiting prometheus.Gauge
	promptTokens     prometheus.Counter
	generationTokens prometheus.Counter
	handler          fasthttp.RequestHandler
}

// Histogram buckets in seconds, vLLM's with finer ones below 10 ms for small models.
var (
	ttftBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	tpotBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
	e2eBuckets  = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 60, 120, 300}
)

func newMetrics(s *Server) *metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tpslice_http_requests_total",
			Help: "HTTP requests by endpoint and status (499: the client left a stream before it ended)."},
			[]string{"endpoint", "status"}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tpslice_time_to_first_token_seconds",
			Help: "Time from a request's arrival to its first generated token.", Buckets: ttftBuckets}),
		tpot: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tpslice_time_per_output_token_seconds",
			Help: "Per request: time after the first token over the tokens after the first.", Buckets: tpotBuckets}),
		e2e: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tpslice_e2e_request_latency_seconds",
			Help: "Time from a generation request's arrival to its end.", Buckets: e2eBuckets}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tpslice_requests_running",
			Help: "Generation requests that have their first token and are not finished."}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tpslice_requests_waiting",
			Help: "Generation requests admitted without a first token yet (queued or in prefill)."}),
		promptTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "tpslice_prompt_tokens_total",
			Help: "Prompt tokens of generation requests."}),
		generationTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "tpslice_generation_tokens_total",
			Help: "Generated tokens."}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.ttft, m.tpot, m.e2e, m.running, m.waiting, m.promptTokens, m.generationTokens} {
		f(c)
	}
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tpslice_kv_blocks_in_use",
		Help: "KV cache blocks allocated to sequences (every rank holds the same blocks)."}, func() float64 {
		if l := s.eng.Load(); l != nil {
			return float64(l.e.Blocks().InUse())
		}
		return 0
	}))
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tpslice_kv_blocks_total",
		Help: "KV cache blocks of the engine."}, func() float64 {
		if l := s.eng.Load(); l != nil {
			return float64(l.e.Model().Options().KVBlocks)
		}
		return 0
	}))
	engineLoad := func(pick func(running, waiting int) int) func() float64 {
		return func() float64 {
			if l := s.eng.Load(); l != nil {
				if lr, ok := l.e.(loadReporter); ok {
					return float64(pick(lr.Load()))
				}
			}
			return 0
		}
	}
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tpslice_engine_sequences_running",
		Help: "Sequences in the engine's running batch (prefilling or decoding), as the engine counts them."},
		engineLoad(func(r, _ int) int { return r })))
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tpslice_engine_sequences_waiting",
		Help: "Sequences in the engine's queue, waiting for a batch slot or KV blocks."},
		engineLoad(func(_, w int) int { return w })))
	engineStats := func(pick func(engine.Stats) int64) func() float64 {
		return func() float64 {
			if l := s.eng.Load(); l != nil {
				if sr, ok := l.e.(statsReporter); ok {
					return float64(pick(sr.Stats()))
				}
			}
			return 0
		}
	}
	f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tpslice_num_preemptions_total",
		Help: "Sequences preempted when the KV cache ran out (recomputed when resumed)."},
		engineStats(func(st engine.Stats) int64 { return st.Preemptions })))
	f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tpslice_prefix_cache_queries_total",
		Help: "Tokens of the sequences admitted with prefix caching on, looked up in the prefix cache."},
		engineStats(func(st engine.Stats) int64 { return st.PrefixCacheQueries })))
	f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tpslice_prefix_cache_hits_total",
		Help: "Tokens of the sequences admitted found in the prefix cache (not computed)."},
		engineStats(func(st engine.Stats) int64 { return st.PrefixCacheHits })))
	f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tpslice_engine_step_failures_total",
		Help: "Steps of the TP group that failed (each followed by a rebuild of the group)."},
		engineStats(func(st engine.Stats) int64 { return st.StepFailures })))
	f(collectiveMetrics{s})
	f(graphMetrics{s})
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return m
}

// loadReporter is an engine that says how many sequences it runs and queues
// (*engine.Engine does).
type loadReporter interface {
	Load() (running, waiting int)
}

// statsReporter is an engine that counts what its scheduler did (*engine.Engine does).
type statsReporter interface {
	Stats() engine.Stats
}

// request counts one request.
func (m *metrics) request(endpoint string, status int) {
	m.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
}
