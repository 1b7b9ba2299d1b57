package serving

import (
	"time"

	"github.com/tpslice/tpslice/bench"
)

// Report is what a load test measured: bench-serve's --json output.
type Report struct {
	URL               string             `json:"url"`
	Model             string             `json:"model"`
	NumPrompts        int                `json:"num_prompts"` // requests sent
	DurationLimitS    float64            `json:"duration_limit_s,omitempty"`
	CancelFraction    float64            `json:"cancel_fraction,omitempty"`
	Concurrency       int                `json:"concurrency"`
	Temperature       *float64           `json:"temperature,omitempty"` // absent: the server's default
	RequestRate       float64            `json:"request_rate"`          // requests/s; 0: all at once
	PromptLen         int                `json:"prompt_len"`
	SharedPrefixLen   int                `json:"shared_prefix_len,omitempty"` // tokens every prompt starts with
	MaxTokens         int                `json:"max_tokens"`
	Completed         int                `json:"completed"`
	Cancelled         int                `json:"cancelled"` // by the client, mid-stream (--cancel-fraction)
	Failed            int                `json:"failed"`
	FirstError        string             `json:"first_error,omitempty"`
	DurationS         float64            `json:"duration_s"`
	RequestThroughput float64            `json:"request_throughput"` // completed requests/s
	OutputThroughput  float64            `json:"output_throughput"`  // output tokens/s
	OutputTokens      int                `json:"output_tokens"`
	TTFT              bench.LatencyStats `json:"ttft_ms"`
	TPOT              bench.LatencyStats `json:"tpot_ms"`
	ITL               bench.LatencyStats `json:"itl_ms"`
	E2E               bench.LatencyStats `json:"e2e_ms"`
	Server            *ServerDrift       `json:"server,omitempty"` // --duration only
	// Scheduler is what the server's scheduler counted over the run (tpslice serve's
	// /metrics; absent from a server without them).
	Scheduler *SchedulerDelta `json:"scheduler,omitempty"`
}

// SchedulerDelta is the change of the server's scheduler counters over the run.
type SchedulerDelta struct {
	PrefixCacheQueries float64 `json:"prefix_cache_queries"`  // prompt tokens looked up in the prefix cache
	PrefixCacheHits    float64 `json:"prefix_cache_hits"`     // of them, found there
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate"` // hits / queries; 0 without queries
	Preemptions        float64 `json:"preemptions"`
}

// Scheduler counters of tpslice serve's /metrics.
const (
	metricPrefixQueries = "tpslice_prefix_cache_queries_total"
	metricPrefixHits    = "tpslice_prefix_cache_hits_total"
	metricPreemptions   = "tpslice_num_preemptions_total"
)

// ServerDrift is what the server's /metrics said of its memory and goroutines over a soak.
type ServerDrift struct {
	Samples         []ServerSample `json:"samples"`
	Error           string         `json:"error,omitempty"` // why sampling stopped
	RSSStart        float64        `json:"rss_start_bytes"`
	RSSEnd          float64        `json:"rss_end_bytes"`
	RSSMax          float64        `json:"rss_max_bytes"`
	GoroutinesStart float64        `json:"goroutines_start"`
	GoroutinesEnd   float64        `json:"goroutines_end"`
	GoroutinesMax   float64        `json:"goroutines_max"`
}

// ServerSample is one reading of the server's process_resident_memory_bytes and
// go_goroutines, at S seconds from the start.
type ServerSample struct {
	S          float64 `json:"s"`
	RSS        float64 `json:"rss_bytes"`
	Goroutines float64 `json:"goroutines"`
}

// requestResult is what one streamed request measured.
type requestResult struct {
	err          error
	cancelled    bool // by the client, after cancelAfter chunks
	ttft, e2e    time.Duration
	itl          []time.Duration
	outputTokens int
}

// summarize turns the requests' results into the report.
func summarize(o Options, results []requestResult, duration time.Duration) *Report {
	rep := &Report{
		URL: o.URL, Model: o.Model, NumPrompts: len(results), DurationLimitS: o.Duration.Seconds(), CancelFraction: o.CancelFraction,
		Concurrency: o.Concurrency, RequestRate: o.RequestRate, PromptLen: o.PromptLen, SharedPrefixLen: o.SharedPrefixLen, MaxTokens: o.MaxTokens, DurationS: duration.Seconds(),
	}
	if o.Temperature >= 0 {
		rep.Temperature = &o.Temperature
	}
	var ttft, tpot, itl, e2e []float64
	for _, r := range results {
		if r.cancelled {
			rep.Cancelled++
			continue
		}
		if r.err != nil {
			if rep.Failed == 0 {
				rep.FirstError = r.err.Error()
			}
			rep.Failed++
			continue
		}
		rep.Completed++
		rep.OutputTokens += r.outputTokens
		ttft = append(ttft, bench.Ms(r.ttft))
		e2e = append(e2e, bench.Ms(r.e2e))
		if r.outputTokens > 1 {
			tpot = append(tpot, bench.Ms(r.e2e-r.ttft)/float64(r.outputTokens-1))
		}
		for _, d := range r.itl {
			itl = append(itl, bench.Ms(d))
		}
	}
	if s := duration.Seconds(); s > 0 {
		rep.RequestThroughput = float64(rep.Completed) / s
		rep.OutputThroughput = float64(rep.OutputTokens) / s
	}
	rep.TTFT, rep.TPOT, rep.ITL, rep.E2E = bench.Stats(ttft), bench.Stats(tpot), bench.Stats(itl), bench.Stats(e2e)
	return rep
}
