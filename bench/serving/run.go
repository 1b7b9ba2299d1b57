package serving

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/tpslice/tpslice/bench"
)

// runServeBench sends the requests (numPrompts, or for o.Duration) and summarizes them; a
// soak samples the server's /metrics at the start, every o.SampleEvery and at the end.
func runServeBench(client *http.Client, o Options, prompts *promptMaker) *Report {
	rng := rand.New(rand.NewPCG(o.Seed, 0x61727269766573)) // "arrives": arrivals and cancellations
	var (
		wg           sync.WaitGroup
		mu           sync.Mutex // guards results and the progress line
		results      []requestResult
		drift        *ServerDrift
		stopSampling = func() {}
	)
	schedulerMetrics := []string{metricPrefixQueries, metricPrefixHits, metricPreemptions}
	counters, _ := scrapeMetrics(client, o, schedulerMetrics...)
	start := time.Now()
	if o.Duration > 0 {
		drift = &ServerDrift{}
		if drift.sample(client, o, start) { // before the load
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				drift.watch(client, o, start, stop)
			}()
			stopSampling = func() { close(stop); <-done }
		}
	}
	sem := make(chan struct{}, o.Concurrency)
	tty := o.Progress != nil && bench.IsTerminal(o.Progress)
	for i := 0; o.Duration > 0 || i < o.NumPrompts; i++ {
		acquire := func() { sem <- struct{}{} }
		switch {
		case o.RequestRate > 0 && i > 0:
			time.Sleep(time.Duration(rng.ExpFloat64() / o.RequestRate * float64(time.Second)))
		case o.RequestRate == 0: // all at once: the next request starts when one ends
			acquire()
			acquire = func() {}
		}
		if o.Duration > 0 && i > 0 && time.Since(start) >= o.Duration {
			if o.RequestRate == 0 {
				<-sem
			}
			break
		}
		prompt := prompts.next()
		cancelAfter := 0 // chunks after which the client leaves; 0: never
		if o.CancelFraction > 0 && rng.Float64() < o.CancelFraction {
			cancelAfter = 1 + rng.IntN(max(1, o.MaxTokens/2))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			acquire()
			r := streamCompletion(client, o, prompt, o.Seed+uint64(i), cancelAfter)
			<-sem
			mu.Lock()
			defer mu.Unlock()
			results = append(results, r)
			if tty {
				fmt.Fprintf(o.Progress, "\r# bench-serve: %d requests done", len(results))
			}
		}()
	}
	wg.Wait()
	duration := time.Since(start)
	if tty {
		fmt.Fprintln(o.Progress)
	}
	rep := summarize(o, results, duration)
	if after, err := scrapeMetrics(client, o, schedulerMetrics...); err == nil && len(counters) == 3 && len(after) == 3 {
		d := &SchedulerDelta{
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
