package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// serveBenchReport is bench-serve's --json output.
type serveBenchReport struct {
	URL               string       `json:"url"`
	Model             string       `json:"model"`
	NumPrompts        int          `json:"num_prompts"` // requests sent
	DurationLimitS    float64      `json:"duration_limit_s,omitempty"`
	CancelFraction    float64      `json:"cancel_fraction,omitempty"`
	Concurrency       int          `json:"concurrency"`
	Temperature       *float64     `json:"temperature,omitempty"` // absent: the server's default
	RequestRate       float64      `json:"request_rate"`          // requests/s; 0: all at once
	PromptLen         int          `json:"prompt_len"`
	SharedPrefixLen   int          `json:"shared_prefix_len,omitempty"` // tokens every prompt starts with
	MaxTokens         int          `json:"max_tokens"`
	Completed         int          `json:"completed"`
	Cancelled         int          `json:"cancelled"` // by the client, mid-stream (--cancel-fraction)
	Failed            int          `json:"failed"`
	FirstError        string       `json:"first_error,omitempty"`
	DurationS         float64      `json:"duration_s"`
	RequestThroughput float64      `json:"request_throughput"` // completed requests/s
	OutputThroughput  float64      `json:"output_throughput"`  // output tokens/s
	OutputTokens      int          `json:"output_tokens"`
	TTFT              latencyStats `json:"ttft_ms"`
	TPOT              latencyStats `json:"tpot_ms"`
	ITL               latencyStats `json:"itl_ms"`
	E2E               latencyStats `json:"e2e_ms"`
	Server            *serverDrift `json:"server,omitempty"` // --duration only
	// Scheduler is what the server's scheduler counted over the run (tpslice serve's
	// /metrics; absent from a server without them).
	Scheduler *schedulerDelta `json:"scheduler,omitempty"`
}

// schedulerDelta is the change of the server's scheduler counters over the run.
type schedulerDelta struct {
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

// serverDrift is what the server's /metrics said of its memory and goroutines over a soak.
type serverDrift struct {
	Samples         []serverSample `json:"samples"`
	Error           string         `json:"error,omitempty"` // why sampling stopped
	RSSStart        float64        `json:"rss_start_bytes"`
	RSSEnd          float64        `json:"rss_end_bytes"`
	RSSMax          float64        `json:"rss_max_bytes"`
	GoroutinesStart float64        `json:"goroutines_start"`
	GoroutinesEnd   float64        `json:"goroutines_end"`
	GoroutinesMax   float64        `json:"goroutines_max"`
}

// serverSample is one reading of the server's process_resident_memory_bytes and
// go_goroutines, at S seconds from the start.
type serverSample struct {
	S          float64 `json:"s"`
	RSS        float64 `json:"rss_bytes"`
	Goroutines float64 `json:"goroutines"`
}

// latencyStats summarizes latencies in milliseconds.
type latencyStats struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
}

type serveBenchOptions struct {
	url, model, apiKey   string
	numPrompts, conc     int
	rate                 float64
	promptLen, maxTokens int
	sharedPrefixLen      int
	temperature          float64 // < 0: not sent (the server's default)
	seed                 uint64
	timeout              time.Duration
	duration, sampleIvl  time.Duration // duration > 0: a soak of that length instead of numPrompts
	settle               time.Duration
	cancelFraction       float64
	asJSON               bool
	explicitModel        bool
}

// requestResult is what one streamed request measured.
type requestResult struct {
	err          error
	cancelled    bool // by the client, after cancelAfter chunks
	ttft, e2e    time.Duration
	itl          []time.Duration
	outputTokens int
}

func benchServe(args []string, stdout, stderr io.Writer) error {
	var o serveBenchOptions
	fs := flag.NewFlagSet("bench-serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8000", "base URL of the server (OpenAI API under /v1)")
	fs.StringVar(&o.model, "model", "", "model name sent in requests (default: the first of GET /v1/models)")
	fs.IntVar(&o.numPrompts, "num-prompts", 64, "requests to send")
	fs.IntVar(&o.conc, "concurrency", 8, "requests in flight at most")
	fs.Float64Var(&o.rate, "request-rate", 0, "requests/s, Poisson arrivals (0: all at once, bounded by --concurrency)")
	fs.IntVar(&o.promptLen, "prompt-len", 64, "synthetic prompt length, in words (roughly tokens); after --shared-prefix-len, in tokens")
	fs.IntVar(&o.sharedPrefixLen, "shared-prefix-len", 0, "every prompt starts with the same `N` tokens (ids of synthetic words, from the server's /tokenize), then --prompt-len random ones; "+
		"one untimed request caches the prefix first")
	fs.IntVar(&o.maxTokens, "max-tokens", 64, "max_tokens of every request")
	fs.Float64Var(&o.temperature, "temperature", -1, "temperature of every request (0: greedy; negative: not sent, the server's default)")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the prompts, the arrivals and the requests' sampling")
	fs.StringVar(&o.apiKey, "api-key", "", "send \"Authorization: Bearer KEY\" (default: $"+apiKeyEnv+")")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "deadline of one request")
	fs.DurationVar(&o.duration, "duration", 0, "a soak: send requests for this long instead of --num-prompts, sampling the server's RSS and goroutines from /metrics")
	fs.DurationVar(&o.sampleIvl, "sample-every", 10*time.Second, "with --duration: how often to sample /metrics")
	fs.DurationVar(&o.settle, "settle", 15*time.Second, "with --duration: after the load, how long to wait for the server's goroutines to come back to their count at start before the last sample")
	fs.Float64Var(&o.cancelFraction, "cancel-fraction", 0, "fraction of requests the client cancels mid-stream, after a random number of tokens")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object instead of the table")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) {
		o.explicitModel = o.explicitModel || f.Name == "model"
	})
	fail := func(format string, a ...any) error { return fmt.Errorf("bench-serve: "+format, a...) }
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case o.numPrompts < 1:
		return fail("--num-prompts must be at least 1, got %d", o.numPrompts)
	case o.conc < 1:
		return fail("--concurrency must be at least 1, got %d", o.conc)
	case o.rate < 0 || math.IsNaN(o.rate) || math.IsInf(o.rate, 0):
		return fail("--request-rate must be a finite number ≥ 0, got %v", o.rate)
	case o.promptLen < 1:
		return fail("--prompt-len must be at least 1, got %d", o.promptLen)
	case o.sharedPrefixLen < 0:
		return fail("--shared-prefix-len must be ≥ 0, got %d", o.sharedPrefixLen)
	case o.maxTokens < 1:
		return fail("--max-tokens must be at least 1, got %d", o.maxTokens)
	case o.timeout <= 0:
		return fail("--timeout must be positive, got %v", o.timeout)
	case o.duration < 0:
		return fail("--duration must be ≥ 0, got %v", o.duration)
	case o.sampleIvl <= 0:
		return fail("--sample-every must be positive, got %v", o.sampleIvl)
	case o.settle < 0:
		return fail("--settle must be ≥ 0, got %v", o.settle)
	case !(o.cancelFraction >= 0 && o.cancelFraction <= 1):
		return fail("--cancel-fraction must be in [0, 1], got %v", o.cancelFraction)
	}
	u, err := url.Parse(o.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail("--url must be an http:// or https:// URL, got %q", o.url)
	}
	o.url = strings.TrimSuffix(o.url, "/")
	if o.apiKey == "" {
		o.apiKey = os.Getenv(apiKeyEnv)
	}
	client := &http.Client{Transport: &http.Transport{
		Proxy:               nil, // a benchmark measures the server, not a proxy
		MaxIdleConns:        o.conc,
		MaxIdleConnsPerHost: o.conc,
		DisableCompression:  true,
	}}
	defer client.CloseIdleConnections()

	name, err := probeModel(client, o)
	if err != nil {
		return fail("%w", err)
	}
	o.model = name
	prompts, err := newPromptMaker(client, o)
	if err != nil {
		return fail("%w", err)
	}

	report := runServeBench(client, o, prompts, stderr)
	if report.FirstError != "" {
		fmt.Fprintf(stderr, "# %d of %d requests failed; the first: %s\n", report.Failed, report.NumPrompts, report.FirstError)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = printServeReport(stdout, report)
	}
	if err == nil && report.Completed+report.Cancelled == 0 {
		err = fail("every request failed; the first: %s", report.FirstError)
	}
	return err
}

// probeModel asks GET /v1/models, which also tells whether the server is reachable at all,
// and returns the model to request: --model, or the first one listed.
func probeModel(client *http.Client, o serveBenchOptions) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := apiRequest(ctx, o, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("cannot reach the server at %s (is `tpslice serve` running?): %w", o.url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		if o.explicitModel && resp.StatusCode != http.StatusUnauthorized {
			return o.model, nil // some servers list no models; the requests will tell
		}
		return "", fmt.Errorf("GET %s/v1/models: %s", o.url, httpError(resp.StatusCode, body))
	}
	if o.explicitModel {
		return o.model, nil
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", fmt.Errorf("GET %s/v1/models lists no model; name one with --model", o.url)
	}
	return list.Data[0].ID, nil
}

// apiRequest is a request to the server's API, with the API key; a body is JSON.
func apiRequest(ctx context.Context, o serveBenchOptions, method, path string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, o.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if o.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.apiKey)
	}
	return req, nil
}

// httpError describes a failed response from its status and OpenAI-style error body.
func httpError(status int, body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return fmt.Sprintf("HTTP %d %s: %s", status, http.StatusText(status), msg)
}

// runServeBench sends the requests (numPrompts, or for o.duration) and summarizes them; a
// soak samples the server's /metrics at the start, every o.sampleIvl and at the end.
func runServeBench(client *http.Client, o serveBenchOptions, prompts *promptMaker, stderr io.Writer) *serveBenchReport {
	rng := rand.New(rand.NewPCG(o.seed, 0x61727269766573)) // "arrives": arrivals and cancellations
	var (
		wg           sync.WaitGroup
		mu           sync.Mutex // guards results and the progress line
		results      []requestResult
		drift        *serverDrift
		stopSampling = func() {}
	)
	schedulerMetrics := []string{metricPrefixQueries, metricPrefixHits, metricPreemptions}
	counters, _ := scrapeMetrics(client, o, schedulerMetrics...)
	start := time.Now()
	if o.duration > 0 {
		drift = &serverDrift{}
		if drift.sample(client, o, start) { // before the load
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				drift.watch(client, o, start, stop)
			}()
			stopSampling = func() { close(stop); <-done }
		}
	}
	sem := make(chan struct{}, o.conc)
	tty := isTerminal(stderr)
	for i := 0; o.duration > 0 || i < o.numPrompts; i++ {
		acquire := func() { sem <- struct{}{} }
		switch {
		case o.rate > 0 && i > 0:
			time.Sleep(time.Duration(rng.ExpFloat64() / o.rate * float64(time.Second)))
		case o.rate == 0: // all at once: the next request starts when one ends
			acquire()
			acquire = func() {}
		}
		if o.duration > 0 && i > 0 && time.Since(start) >= o.duration {
			if o.rate == 0 {
				<-sem
			}
			break
		}
		prompt := prompts.next()
		cancelAfter := 0 // chunks after which the client leaves; 0: never
		if o.cancelFraction > 0 && rng.Float64() < o.cancelFraction {
			cancelAfter = 1 + rng.IntN(max(1, o.maxTokens/2))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			acquire()
			r := streamCompletion(client, o, prompt, o.seed+uint64(i), cancelAfter)
			<-sem
			mu.Lock()
			defer mu.Unlock()
			results = append(results, r)
			if tty {
				fmt.Fprintf(stderr, "\r# bench-serve: %d requests done", len(results))
			}
		}()
	}
	wg.Wait()
	duration := time.Since(start)
	if tty {
		fmt.Fprintln(stderr)
	}
	rep := summarize(o, results, duration)
	if after, err := scrapeMetrics(client, o, schedulerMetrics...); err == nil && len(counters) == 3 && len(after) == 3 {
		d := &schedulerDelta{
			PrefixCacheQueries: after[metricPrefixQueries] - counters[metricPrefixQueries],
			PrefixCacheHits:    after[metricPrefixHits] - counters[metricPrefixHits],
			Preemptions:        after[metricPreemptions] - counters[metricPreemptions],
		}
		if d.PrefixCacheQueries > 0 {
			d.PrefixCacheHitRate = d.PrefixCacheHits / d.PrefixCacheQueries
		}
		rep.Scheduler = d
	}
	if drift != nil {
		client.CloseIdleConnections() // the server's goroutines for them end
		stopSampling()
		rep.Server = drift
	}
	return rep
}

// sample reads the server's /metrics once into d; it reports false, saying why in d.Error,
// when that failed.
func (d *serverDrift) sample(client *http.Client, o serveBenchOptions, start time.Time) bool {
	rss, g, err := serverMetrics(client, o)
	if err != nil {
		d.Error = err.Error()
		return false
	}
	d.record(serverSample{S: time.Since(start).Seconds(), RSS: rss, Goroutines: g})
	return true
}

func (d *serverDrift) record(s serverSample) {
	if len(d.Samples) == 0 {
		d.RSSStart, d.GoroutinesStart = s.RSS, s.Goroutines
	}
	d.Samples = append(d.Samples, s)
	d.RSSEnd, d.GoroutinesEnd = s.RSS, s.Goroutines
	d.RSSMax, d.GoroutinesMax = max(d.RSSMax, s.RSS), max(d.GoroutinesMax, s.Goroutines)
}

// watch samples every o.sampleIvl until stop closes; then, polling every half second for
// up to o.settle, it waits for the server's goroutines (those of its idle HTTP workers
// too) to come back to their count at the start, and records the last reading. It stops
// at a failed sample.
func (d *serverDrift) watch(client *http.Client, o serveBenchOptions, start time.Time, stop <-chan struct{}) {
	t := time.NewTicker(o.sampleIvl)
	defer t.Stop()
	for done := false; !done; {
		select {
		case <-t.C:
			if !d.sample(client, o, start) {
				return
			}
		case <-stop:
			done = true
		}
	}
	deadline := time.Now().Add(o.settle)
	for {
		rss, g, err := serverMetrics(client, o)
		if err != nil {
			d.Error = err.Error()
			return
		}
		if g <= d.GoroutinesStart || !time.Now().Before(deadline) {
			d.record(serverSample{S: time.Since(start).Seconds(), RSS: rss, Goroutines: g})
			return
		}
		time.Sleep(min(500*time.Millisecond, time.Until(deadline)))
	}
}

// serverMetrics reads process_resident_memory_bytes and go_goroutines from the server's
// Prometheus /metrics (client_golang's process and Go collectors).
func serverMetrics(client *http.Client, o serveBenchOptions) (rss, goroutines float64, err error) {
	const rssName, gName = "process_resident_memory_bytes", "go_goroutines"
	m, err := scrapeMetrics(client, o, rssName, gName)
	if err != nil {
		return 0, 0, err
	}
	if len(m) < 2 {
		return 0, 0, fmt.Errorf("GET %s/metrics has no %s and %s", o.url, rssName, gName)
	}
	return m[rssName], m[gName], nil
}

// scrapeMetrics reads the unlabelled samples of the named metrics from the server's
// Prometheus /metrics; a name it does not export is absent from the map.
func scrapeMetrics(client *http.Client, o serveBenchOptions, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s/metrics: %w", o.url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s/metrics: %w", o.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", o.url, httpError(resp.StatusCode, body))
	}
	m := make(map[string]float64, len(names))
	for line := range strings.Lines(string(body)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("GET %s/metrics: %s: %w", o.url, name, err)
		}
		m[name] = v
	}
	return m, nil
}

// benchWords are the words synthetic prompts are made of: common English words, about one
// token each in most vocabularies.
var benchWords = strings.Fields(`the of and to in is was for on that with as by at from it his an were are which
this be or has had first one their its new after who they two her she been other when time during there into
school more may years over only year most would world city some where between later three state such then
national used made known under many university united while part season team these american than film second
born south became states war through being including both before north high however people family early history
album area them series against until since district county name work life group music following number company`)

// syntheticPrompt returns n deterministic words drawn by rng.
func syntheticPrompt(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[rng.IntN(len(benchWords))])
	}
	return b.String()
}

// promptMaker draws the requests' prompts: promptLen synthetic words, or, with a shared
// prefix, the prefix's ids followed by promptLen ids drawn from the tokens of synthetic words.
type promptMaker struct {
	rng          *rand.Rand
	n            int
	prefix, pool []int32
}

// newPromptMaker returns o's prompts. With a shared prefix it tokenizes synthetic words on
// the server (POST /tokenize, BOS first where the vocabulary adds it), keeps the first
// o.sharedPrefixLen ids as the prefix, and sends one request of it, untimed, so that the
// server has it cached before the run.
func newPromptMaker(client *http.Client, o serveBenchOptions) (*promptMaker, error) {
	m := &promptMaker{rng: rand.New(rand.NewPCG(o.seed, 0x7470736c696365)), n: o.promptLen} // "tpslice"
	if o.sharedPrefixLen == 0 {
		return m, nil
	}
	words := rand.New(rand.NewPCG(o.seed, 0x707265666978)) // "prefix"
	for n := o.sharedPrefixLen + 64; ; n *= 2 {
		ids, err := serverTokenize(client, o, syntheticPrompt(words, n))
		if err != nil {
			return nil, fmt.Errorf("--shared-prefix-len: %w", err)
		}
		if len(ids) > o.sharedPrefixLen {
			m.prefix, m.pool = ids[:o.sharedPrefixLen], ids[1:] // the pool without BOS
			break
		}
		if n > 64*o.sharedPrefixLen {
			return nil, fmt.Errorf("--shared-prefix-len: %d words tokenize to %d tokens only", n, len(ids))
		}
	}
	warm := o
	warm.maxTokens = 1
	if r := streamCompletion(client, warm, m.next(), o.seed, 0); r.err != nil {
		return nil, fmt.Errorf("--shared-prefix-len: the request caching the prefix: %w", r.err)
	}
	return m, nil
}

// next returns the next prompt: text, or ids.
func (m *promptMaker) next() any {
	if m.prefix == nil {
		return syntheticPrompt(m.rng, m.n)
	}
	ids := slices.Grow(slices.Clone(m.prefix), m.n)
	for range m.n {
		ids = append(ids, m.pool[m.rng.IntN(len(m.pool))])
	}
	return ids
}

// serverTokenize returns the ids of text from the server's POST /tokenize (vLLM's).
func serverTokenize(client *http.Client, o serveBenchOptions, text string) ([]int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"model": o.model, "prompt": text, "add_special_tokens": true})
	req, err := apiRequest(ctx, o, http.MethodPost, "/tokenize", body)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s/tokenize: %s", o.url, httpError(resp.StatusCode, b))
	}
	var r struct {
		Tokens []int32 `json:"tokens"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("POST %s/tokenize: %w", o.url, err)
	}
	return r.Tokens, nil
}

// streamCompletion sends one streamed completion and times its chunks; with cancelAfter
// > 0 it leaves after that many chunks (closing the connection).
func streamCompletion(client *http.Client, o serveBenchOptions, prompt any, seed uint64, cancelAfter int) (r requestResult) {
	req := map[string]any{
		"model": o.model, "prompt": prompt, "max_tokens": o.maxTokens, "seed": int64(seed),
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	}
	if o.temperature >= 0 {
		req["temperature"] = o.temperature
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	hreq, err := apiRequest(ctx, o, http.MethodPost, "/v1/completions", body)
	if err != nil {
		return requestResult{err: err}
	}
	start := time.Now()
	resp, err := client.Do(hreq)
	if err != nil {
		return requestResult{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return requestResult{err: errors.New(httpError(resp.StatusCode, b))}
	}
	var (
		last      time.Time
		chunks    int
		usageSeen bool
		finished  bool
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // blank lines between events, ": ping" comments
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			finished = true
			break
		}
		now := time.Now()
		var ev struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return requestResult{err: fmt.Errorf("a malformed event %.80q: %w", data, err)}
		}
		if ev.Error != nil {
			return requestResult{err: fmt.Errorf("error event: %s", ev.Error.Message)}
		}
		if len(ev.Choices) > 0 && ev.Choices[0].Text != "" {
			if chunks == 0 {
				r.ttft = now.Sub(start)
			} else {
				r.itl = append(r.itl, now.Sub(last))
			}
			last = now
			chunks++
			if chunks == cancelAfter {
				return requestResult{cancelled: true}
			}
		}
		if ev.Usage != nil {
			r.outputTokens, usageSeen = ev.Usage.CompletionTokens, true
		}
	}
	r.e2e = time.Since(start)
	if err := sc.Err(); err != nil {
		return requestResult{err: fmt.Errorf("reading the stream: %w", err)}
	}
	if !finished {
		return requestResult{err: errors.New("the stream ended without data: [DONE]")}
	}
	if !usageSeen {
		r.outputTokens = chunks // a server that ignores include_usage: one token a chunk
	}
	if chunks == 0 {
		r.ttft = r.e2e // every token's text was held back to the end
	}
	return r
}

// summarize turns the requests' results into the report.
func summarize(o serveBenchOptions, results []requestResult, duration time.Duration) *serveBenchReport {
	rep := &serveBenchReport{
		URL: o.url, Model: o.model, NumPrompts: len(results), DurationLimitS: o.duration.Seconds(), CancelFraction: o.cancelFraction,
		Concurrency: o.conc, RequestRate: o.rate, PromptLen: o.promptLen, SharedPrefixLen: o.sharedPrefixLen, MaxTokens: o.maxTokens, DurationS: duration.Seconds(),
	}
	if o.temperature >= 0 {
		rep.Temperature = &o.temperature
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
		ttft = append(ttft, ms(r.ttft))
		e2e = append(e2e, ms(r.e2e))
		if r.outputTokens > 1 {
			tpot = append(tpot, ms(r.e2e-r.ttft)/float64(r.outputTokens-1))
		}
		for _, d := range r.itl {
			itl = append(itl, ms(d))
		}
	}
	if s := duration.Seconds(); s > 0 {
		rep.RequestThroughput = float64(rep.Completed) / s
		rep.OutputThroughput = float64(rep.OutputTokens) / s
	}
	rep.TTFT, rep.TPOT, rep.ITL, rep.E2E = stats(ttft), stats(tpot), stats(itl), stats(e2e)
	return rep
}

// stats returns the mean and percentiles of xs (numpy's linear interpolation), zeros when
// xs is empty.
func stats(xs []float64) latencyStats {
	if len(xs) == 0 {
		return latencyStats{}
	}
	sort.Float64s(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return latencyStats{Mean: sum / float64(len(xs)), P50: percentile(xs, 50), P90: percentile(xs, 90), P99: percentile(xs, 99)}
}

// percentile is the p-th percentile of sorted xs, interpolating linearly between ranks.
func percentile(sorted []float64, p float64) float64 {
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

func printServeReport(w io.Writer, r *serveBenchReport) error {
	temp := "the server's default temperature"
	if r.Temperature != nil {
		temp = fmt.Sprintf("temperature %g", *r.Temperature)
	}
	rate := "all at once"
	if r.RequestRate > 0 {
		rate = fmt.Sprintf("%g req/s (Poisson)", r.RequestRate)
	}
	soak := ""
	if r.DurationLimitS > 0 {
		soak = fmt.Sprintf(" (a soak of %g s)", r.DurationLimitS)
	}
	prompt := fmt.Sprintf("~%d words", r.PromptLen)
	if r.SharedPrefixLen > 0 {
		prompt = fmt.Sprintf("a shared %d-token prefix + %d random tokens", r.SharedPrefixLen, r.PromptLen)
	}
	fmt.Fprintf(w, "# tpslice bench-serve: %d prompts%s of %s, max_tokens %d, to %s at %s\n",
		r.NumPrompts, soak, prompt, r.MaxTokens, r.Model, r.URL)
	fmt.Fprintf(w, "# concurrency %d, arrivals %s, %s\n", r.Concurrency, rate, temp)
	cancelled := ""
	if r.CancelFraction > 0 {
		cancelled = fmt.Sprintf(", cancelled %d (--cancel-fraction %g)", r.Cancelled, r.CancelFraction)
	}
	fmt.Fprintf(w, "# completed %d, failed %d%s in %.2f s: %.2f req/s, %.1f output tok/s (%d output tokens)\n",
		r.Completed, r.Failed, cancelled, r.DurationS, r.RequestThroughput, r.OutputThroughput, r.OutputTokens)
	if d := r.Server; d != nil {
		if len(d.Samples) > 0 {
			const mib = 1 << 20
			fmt.Fprintf(w, "# server, %d samples of /metrics over %.0f s: RSS %.1f MiB at the start, %.1f at the end (%+.1f), max %.1f; "+
				"goroutines %.0f at the start, %.0f at the end (%+.0f), max %.0f\n",
				len(d.Samples), d.Samples[len(d.Samples)-1].S, d.RSSStart/mib, d.RSSEnd/mib, (d.RSSEnd-d.RSSStart)/mib, d.RSSMax/mib,
				d.GoroutinesStart, d.GoroutinesEnd, d.GoroutinesEnd-d.GoroutinesStart, d.GoroutinesMax)
		}
		if d.Error != "" {
			fmt.Fprintf(w, "# sampling the server stopped: %s\n", d.Error)
		}
	}
	if d := r.Scheduler; d != nil {
		fmt.Fprintf(w, "# server's scheduler: prefix-cache hit rate %.1f%% (%.0f of %.0f prompt tokens), %.0f preemptions\n",
			100*d.PrefixCacheHitRate, d.PrefixCacheHits, d.PrefixCacheQueries, d.Preemptions)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ms\tmean\tp50\tp90\tp99\t")
	for _, row := range []struct {
		name string
		s    latencyStats
	}{{"TTFT", r.TTFT}, {"TPOT", r.TPOT}, {"ITL", r.ITL}, {"E2E", r.E2E}} {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t\n", row.name, row.s.Mean, row.s.P50, row.s.P90, row.s.P99)
	}
	return tw.Flush()
}
