package serving

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sample reads the server's /metrics once into d; it reports false, saying why in d.Error,
// when that failed.
func (d *ServerDrift) sample(client *http.Client, o Options, start time.Time) bool {
	rss, g, err := serverMetrics(client, o)
	if err != nil {
		d.Error = err.Error()
		return false
	}
	d.record(ServerSample{S: time.Since(start).Seconds(), RSS: rss, Goroutines: g})
	return true
}

func (d *ServerDrift) record(s ServerSample) {
	if len(d.Samples) == 0 {
		d.RSSStart, d.GoroutinesStart = s.RSS, s.Goroutines
	}
	d.Samples = append(d.Samples, s)
	d.RSSEnd, d.GoroutinesEnd = s.RSS, s.Goroutines
	d.RSSMax, d.GoroutinesMax = max(d.RSSMax, s.RSS), max(d.GoroutinesMax, s.Goroutines)
}

// watch samples every o.SampleEvery until stop closes; then, polling every half second for
// up to o.Settle, it waits for the server's goroutines (those of its idle HTTP workers
// too) to come back to their count at the start, and records the last reading. It stops
// at a failed sample.
func (d *ServerDrift) watch(client *http.Client, o Options, start time.Time, stop <-chan struct{}) {
	t := time.NewTicker(o.SampleEvery)
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
	deadline := time.Now().Add(o.Settle)
	for {
		rss, g, err := serverMetrics(client, o)
		if err != nil {
			d.Error = err.Error()
			return
		}
		if g <= d.GoroutinesStart || !time.Now().Before(deadline) {
			d.record(ServerSample{S: time.Since(start).Seconds(), RSS: rss, Goroutines: g})
			return
		}
		time.Sleep(min(500*time.Millisecond, time.Until(deadline)))
	}
}

// serverMetrics reads process_resident_memory_bytes and go_goroutines from the server's
// Prometheus /metrics (client_golang's process and Go collectors).
func serverMetrics(client *http.Client, o Options) (rss, goroutines float64, err error) {
	const rssName, gName = "process_resident_memory_bytes", "go_goroutines"
	m, err := scrapeMetrics(client, o, rssName, gName)
	if err != nil {
		return 0, 0, err
	}
	if len(m) < 2 {
		return 0, 0, fmt.Errorf("GET %s/metrics has no %s and %s", o.URL, rssName, gName)
	}
	return m[rssName], m[gName], nil
}

// scrapeMetrics reads the unlabelled samples of the named metrics from the server's
// Prometheus /metrics; a name it does not export is absent from the map.
func scrapeMetrics(client *http.Client, o Options, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.URL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s/metrics: %w", o.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s/metrics: %w", o.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", o.URL, httpError(resp.StatusCode, body))
	}
	m := make(map[string]float64, len(names))
	for line := range strings.Lines(string(body)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("GET %s/metrics: %s: %w", o.URL, name, err)
		}
		m[name] = v
	}
	return m, nil
}
