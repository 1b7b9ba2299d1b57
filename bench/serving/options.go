package serving

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Options is one load test; the zero value of a field is no default (bench-serve's flags
// have them).
type Options struct {
	URL    string // the server's base URL; the OpenAI API is under /v1
	Model  string // sent in every request; empty: the first of GET /v1/models
	APIKey string // sent as "Authorization: Bearer KEY" when not empty

	NumPrompts  int     // requests to send (without Duration)
	Concurrency int     // requests in flight at most
	RequestRate float64 // requests/s, Poisson arrivals; 0: all at once, bounded by Concurrency

	PromptLen       int     // synthetic words, or random tokens after a shared prefix
	SharedPrefixLen int     // tokens every prompt starts with; 0: none
	MaxTokens       int     // max_tokens of every request
	Temperature     float64 // < 0: not sent (the server's default)
	Seed            uint64  // of the prompts, the arrivals and the requests' sampling
	Timeout         time.Duration

	// Duration > 0 is a soak of that length instead of NumPrompts, sampling the server's
	// /metrics every SampleEvery and waiting up to Settle after it for the server's
	// goroutines to come back.
	Duration, SampleEvery, Settle time.Duration
	CancelFraction                float64 // of requests the client cancels mid-stream

	// Progress, when a terminal, gets a count of the requests done, redrawn in place.
	Progress io.Writer
}

// Validate checks o; an error names bench-serve's flag for the bad field.
func (o Options) Validate() error {
	switch {
	case o.NumPrompts < 1:
		return fmt.Errorf("--num-prompts must be at least 1, got %d", o.NumPrompts)
	case o.Concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, got %d", o.Concurrency)
	case o.RequestRate < 0 || math.IsNaN(o.RequestRate) || math.IsInf(o.RequestRate, 0):
		return fmt.Errorf("--request-rate must be a finite number ≥ 0, got %v", o.RequestRate)
	case o.PromptLen < 1:
		return fmt.Errorf("--prompt-len must be at least 1, got %d", o.PromptLen)
	case o.SharedPrefixLen < 0:
		return fmt.Errorf("--shared-prefix-len must be ≥ 0, got %d", o.SharedPrefixLen)
	case o.MaxTokens < 1:
		return fmt.Errorf("--max-tokens must be at least 1, got %d", o.MaxTokens)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout must be positive, got %v", o.Timeout)
	case o.Duration < 0:
		return fmt.Errorf("--duration must be ≥ 0, got %v", o.Duration)
	case o.SampleEvery <= 0:
		return fmt.Errorf("--sample-every must be positive, got %v", o.SampleEvery)
	case o.Settle < 0:
		return fmt.Errorf("--settle must be ≥ 0, got %v", o.Settle)
	case !(o.CancelFraction >= 0 && o.CancelFraction <= 1):
		return fmt.Errorf("--cancel-fraction must be in [0, 1], got %v", o.CancelFraction)
	}
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url must be an http:// or https:// URL, got %q", o.URL)
	}
	return nil
}

// Run runs the load test o against its server and summarizes it. It fails only when the
// server cannot be reached or the prompts cannot be made; failed requests are counted in
// the report (Failed, FirstError).
func Run(o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.URL = strings.TrimSuffix(o.URL, "/")
	client := &http.Client{Transport: &http.Transport{
		Proxy:               nil, // a benchmark measures the server, not a proxy
		MaxIdleConns:        o.Concurrency,
		MaxIdleConnsPerHost: o.Concurrency,
		DisableCompression:  true,
	}}
	defer client.CloseIdleConnections()

	name, err := probeModel(client, o)
	if err != nil {
		return nil, err
	}
	o.Model = name
	prompts, err := newPromptMaker(client, o)
	if err != nil {
		return nil, err
	}
	return runServeBench(client, o, prompts), nil
}
