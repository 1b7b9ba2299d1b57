package serving

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// Options is one load test. The CLI's bench-serve checks them (its flags' names are in
// the messages) before Run; the zero value of a field is no default.
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

// Run runs the load test o against its server and summarizes it. It fails only when the
// server cannot be reached or the prompts cannot be made; failed requests are counted in
// the report (Failed, FirstError).
func Run(o Options) (*Report, error) {
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
