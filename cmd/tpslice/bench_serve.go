package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/tpslice/tpslice/bench"
	"github.com/tpslice/tpslice/bench/serving"
)

// benchServe load-tests a running server (package serving) and prints its report.
func benchServe(args []string, stdout, stderr io.Writer) error {
	var (
		o      serving.Options
		asJSON bool
	)
	fs := flag.NewFlagSet("bench-serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.URL, "url", "http://127.0.0.1:8000", "base URL of the server (OpenAI API under /v1)")
	fs.StringVar(&o.Model, "model", "", "model name sent in requests (default: the first of GET /v1/models)")
	fs.IntVar(&o.NumPrompts, "num-prompts", 64, "requests to send")
	fs.IntVar(&o.Concurrency, "concurrency", 8, "requests in flight at most")
	fs.Float64Var(&o.RequestRate, "request-rate", 0, "requests/s, Poisson arrivals (0: all at once, bounded by --concurrency)")
	fs.IntVar(&o.PromptLen, "prompt-len", 64, "synthetic prompt length, in words (roughly tokens); after --shared-prefix-len, in tokens")
	fs.IntVar(&o.SharedPrefixLen, "shared-prefix-len", 0, "every prompt starts with the same `N` tokens (ids of synthetic words, from the server's /tokenize), then --prompt-len random ones; "+
		"one untimed request caches the prefix first")
	fs.IntVar(&o.MaxTokens, "max-tokens", 64, "max_tokens of every request")
	fs.Float64Var(&o.Temperature, "temperature", -1, "temperature of every request (0: greedy; negative: not sent, the server's default)")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the prompts, the arrivals and the requests' sampling")
	fs.StringVar(&o.APIKey, "api-key", "", "send \"Authorization: Bearer KEY\" (default: $"+apiKeyEnv+")")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "deadline of one request")
	fs.DurationVar(&o.Duration, "duration", 0, "a soak: send requests for this long instead of --num-prompts, sampling the server's RSS and goroutines from /metrics")
	fs.DurationVar(&o.SampleEvery, "sample-every", 10*time.Second, "with --duration: how often to sample /metrics")
	fs.DurationVar(&o.Settle, "settle", 15*time.Second, "with --duration: after the load, how long to wait for the server's goroutines to come back to their count at start before the last sample")
	fs.Float64Var(&o.CancelFraction, "cancel-fraction", 0, "fraction of requests the client cancels mid-stream, after a random number of tokens")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object instead of the table")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fail := func(format string, a ...any) error { return fmt.Errorf("bench-serve: "+format, a...) }
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if o.APIKey == "" {
		o.APIKey = os.Getenv(apiKeyEnv)
	}
	o.Progress = stderr
	report, err := serving.Run(o) // it checks o first
	if err != nil {
		return fail("%w", err)
	}
	if report.FirstError != "" {
		fmt.Fprintf(stderr, "# %d of %d requests failed; the first: %s\n", report.Failed, report.NumPrompts, report.FirstError)
	}
	if asJSON {
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

// printServeReport prints r as bench-serve's table.
func printServeReport(w io.Writer, r *serving.Report) error {
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
		s    bench.LatencyStats
	}{{"TTFT", r.TTFT}, {"TPOT", r.TPOT}, {"ITL", r.ITL}, {"E2E", r.E2E}} {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t\n", row.name, row.s.Mean, row.s.P50, row.s.P90, row.s.P99)
	}
	return tw.Flush()
}
