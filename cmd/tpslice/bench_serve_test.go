package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/bench"
	"github.com/tpslice/tpslice/bench/serving"
	"github.com/tpslice/tpslice/internal/testutil"
)

// startTestServer serves the tiny preset at TP 2 on a free loopback port, with serve's
// flags extra, until the test ends, and returns its base URL.
func startTestServer(t *testing.T, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testutil.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- serveUntil(ctx, append([]string{"--model", "tiny", "--tp", "2", "--port", "0"}, extra...), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, "%s", stderr.String())
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	re := regexp.MustCompile(`serving tiny at TP=2 on (http://127\.0\.0\.1:\d+) `)
	var base string
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
		default:
		}
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
		return base != ""
	}, 20*time.Second, 10*time.Millisecond)
	return base
}

// TestBenchServe runs bench-serve against the real server over HTTP, both as bench-serve
// and as "bench serve".
func TestBenchServe(t *testing.T) {
	base := startTestServer(t)
	for _, cmd := range [][]string{{"bench-serve"}, {"bench", "serve"}} {
		t.Run(strings.Join(cmd, " "), func(t *testing.T) {
			out, errOut, err := runCLI(t, append(cmd, "--url", base, "--num-prompts", "8", "--concurrency", "4",
				"--max-tokens", "8", "--prompt-len", "16", "--json")...)
			require.NoError(t, err, "%s", errOut)
			var r serving.Report
			require.NoError(t, json.Unmarshal([]byte(out), &r), "%s", out)
			require.Equal(t, 8, r.Completed, "%s", errOut)
			require.Zero(t, r.Failed)
			require.Empty(t, r.FirstError)
			require.Equal(t, "tiny", r.Model, "the model comes from /v1/models")
			require.Equal(t, 8, r.NumPrompts)
			require.Equal(t, 4, r.Concurrency)
			require.Positive(t, r.DurationS)
			require.Positive(t, r.RequestThroughput)
			require.Positive(t, r.OutputThroughput)
			require.Positive(t, r.OutputTokens)
			require.LessOrEqual(t, r.OutputTokens, 8*8)
			for name, s := range map[string]bench.LatencyStats{"ttft": r.TTFT, "tpot": r.TPOT, "itl": r.ITL, "e2e": r.E2E} {
				require.Positive(t, s.P50, name)
				require.LessOrEqual(t, s.P50, s.P90, name)
				require.LessOrEqual(t, s.P90, s.P99, name)
			}
			require.LessOrEqual(t, r.TTFT.P50, r.E2E.P99)
		})
	}

	t.Run("table", func(t *testing.T) {
		out, errOut, err := runCLI(t, "bench-serve", "--url", base, "--num-prompts", "2", "--max-tokens", "4", "--request-rate", "50", "--temperature", "0")
		require.NoError(t, err, "%s", errOut)
		require.Contains(t, out, "arrivals 50 req/s (Poisson), temperature 0")
		require.Contains(t, out, "completed 2, failed 0")
		require.Regexp(t, `(?m)^\s+TTFT(\s+\d+\.\d\d){4}$`, out)
	})

	t.Run("failures", func(t *testing.T) {
		out, errOut, err := runCLI(t, "bench-serve", "--url", base, "--model", "gpt-9", "--num-prompts", "2", "--json")
		require.ErrorContains(t, err, "every request failed")
		require.ErrorContains(t, err, "HTTP 404")
		var r serving.Report
		require.NoError(t, json.Unmarshal([]byte(out), &r), "%s", out)
		require.Equal(t, 0, r.Completed)
		require.Equal(t, 2, r.Failed)
		require.Contains(t, r.FirstError, "gpt-9")
		require.Contains(t, errOut, "2 of 2 requests failed")
	})
}

// TestBenchServeSoak: a short soak with cancellations against the real server: every
// request sent is completed or cancelled, none fails, and /metrics was sampled throughout.
func TestBenchServeSoak(t *testing.T) {
	base := startTestServer(t)
	out, errOut, err := runCLI(t, "bench", "serve", "--url", base, "--duration", "2s", "--cancel-fraction", "0.3",
		"--concurrency", "4", "--max-tokens", "32", "--prompt-len", "8", "--sample-every", "500ms", "--settle", "2s", "--json")
	require.NoError(t, err, "%s", errOut)
	var r serving.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), "%s", out)
	require.Zero(t, r.Failed, r.FirstError)
	require.Positive(t, r.Completed)
	require.Positive(t, r.Cancelled)
	require.Equal(t, r.NumPrompts, r.Completed+r.Cancelled)
	require.GreaterOrEqual(t, r.DurationS, 2.0)
	require.Equal(t, 2.0, r.DurationLimitS)
	d := r.Server
	require.NotNil(t, d)
	require.Empty(t, d.Error)
	require.GreaterOrEqual(t, len(d.Samples), 4, "at the start, every 500 ms, at the end")
	for _, v := range []float64{d.RSSStart, d.RSSEnd, d.GoroutinesStart, d.GoroutinesEnd} {
		require.Positive(t, v)
	}
	require.GreaterOrEqual(t, d.RSSMax, d.RSSEnd)
	require.GreaterOrEqual(t, d.GoroutinesMax, d.GoroutinesEnd)

	out, errOut, err = runCLI(t, "bench", "serve", "--url", base, "--duration", "500ms", "--cancel-fraction", "1",
		"--max-tokens", "32", "--prompt-len", "8", "--settle", "0s")
	require.NoError(t, err, "%s", errOut)
	require.Regexp(t, `completed \d+, failed 0, cancelled \d+ \(--cancel-fraction 1\)`, out)
	require.Regexp(t, `server, \d+ samples of /metrics over \d+ s: RSS \d+\.\d MiB at the start`, out)
}

// TestBenchServeSharedPrefix: prompts that share a 64-token prefix hit the server's prefix
// cache, as its /metrics counts, unless the server runs with --no-prefix-caching.
func TestBenchServeSharedPrefix(t *testing.T) {
	for _, caching := range []bool{true, false} {
		t.Run(map[bool]string{true: "caching", false: "no-prefix-caching"}[caching], func(t *testing.T) {
			var extra []string
			if !caching {
				extra = []string{"--no-prefix-caching"}
			}
			base := startTestServer(t, extra...)
			out, errOut, err := runCLI(t, "bench", "serve", "--url", base, "--shared-prefix-len", "64", "--prompt-len", "8",
				"--num-prompts", "8", "--concurrency", "4", "--max-tokens", "4", "--json")
			require.NoError(t, err, "%s", errOut)
			var r serving.Report
			require.NoError(t, json.Unmarshal([]byte(out), &r), "%s", out)
			require.Equal(t, 8, r.Completed, r.FirstError)
			require.Equal(t, 64, r.SharedPrefixLen)
			d := r.Scheduler
			require.NotNil(t, d)
			require.Zero(t, d.Preemptions)
			if caching {
				require.Equal(t, float64(8*(64+8)), d.PrefixCacheQueries, "the prompts' tokens, the untimed request's not")
				require.Greater(t, d.PrefixCacheHitRate, 0.5)
				require.InDelta(t, d.PrefixCacheHits/d.PrefixCacheQueries, d.PrefixCacheHitRate, 1e-12)
			} else {
				require.Zero(t, d.PrefixCacheQueries)
				require.Zero(t, d.PrefixCacheHitRate)
			}
		})
	}

	base := startTestServer(t)
	out, errOut, err := runCLI(t, "bench", "serve", "--url", base, "--shared-prefix-len", "32", "--prompt-len", "4",
		"--num-prompts", "2", "--max-tokens", "2")
	require.NoError(t, err, "%s", errOut)
	require.Contains(t, out, "prompts of a shared 32-token prefix + 4 random tokens")
	require.Regexp(t, `prefix-cache hit rate \d+\.\d% \(\d+ of 72 prompt tokens\), 0 preemptions`, out)
}

func TestBenchServeUnreachable(t *testing.T) {
	_, _, err := runCLI(t, "bench-serve", "--url", "http://127.0.0.1:1", "--num-prompts", "1")
	require.ErrorContains(t, err, "bench-serve: cannot reach the server at http://127.0.0.1:1")
	require.ErrorContains(t, err, "connection refused")
}

func TestBenchServeBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--num-prompts", "0"}, "--num-prompts must be at least 1"},
		{[]string{"--concurrency", "0"}, "--concurrency must be at least 1"},
		{[]string{"--request-rate", "-1"}, "--request-rate must be a finite number ≥ 0"},
		{[]string{"--max-tokens", "0"}, "--max-tokens must be at least 1"},
		{[]string{"--shared-prefix-len", "-1"}, "--shared-prefix-len must be ≥ 0"},
		{[]string{"--url", "localhost:8000"}, "--url must be an http:// or https:// URL"},
		{[]string{"--duration", "-1s"}, "--duration must be ≥ 0"},
		{[]string{"--cancel-fraction", "1.5"}, "--cancel-fraction must be in [0, 1]"},
		{[]string{"--sample-every", "0s"}, "--sample-every must be positive"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		_, _, err := runCLI(t, append([]string{"bench-serve"}, tc.args...)...)
		require.ErrorContains(t, err, tc.want)
	}
}
