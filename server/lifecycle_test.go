package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// post in a goroutine: no require there; the status (or -1) arrives on the channel.
func postAsync(url string, body any) <-chan int {
	ch := make(chan int, 1)
	go func() {
		raw, _ := json.Marshal(body)
		resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
		if err != nil {
			ch <- -1
			return
		}
		resp.Body.Close()
		ch <- resp.StatusCode
	}()
	return ch
}

// TestQueueFull: with MaxWaiting 1 and one request waiting in the engine, the next is
// refused with 429; once the first is through, requests pass again.
func TestQueueFull(t *testing.T) {
	e := newEngine(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	h := hookEngine{Engine: e, before: func(ctx context.Context) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	ts := start(t, Config{MaxWaiting: 1}, h)
	first := postAsync(ts.url+"/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": 2})
	<-entered

	resp, body := ts.post(t, "/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": 2, "stream": true})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", body)
	e429 := decode(t, string(body))["error"].(map[string]any)
	require.Equal(t, "rate_limit_error", e429["type"])
	require.Equal(t, "queue_full", e429["code"])
	_, m := ts.get(t, "/metrics")
	require.Equal(t, "1", metricValue(string(m), "tpslice_requests_waiting"))

	close(release)
	require.Equal(t, http.StatusOK, <-first)
	resp, body = ts.post(t, "/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": 2})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	_, m = ts.get(t, "/metrics")
	require.Equal(t, "1", metricValue(string(m), `tpslice_http_requests_total{endpoint="/v1/completions",status="429"}`))
	require.Equal(t, "0", metricValue(string(m), "tpslice_requests_waiting"))
}

// TestEngineFailure: a failing generation is a 503, or in a stream an error event and
// [DONE].
func TestEngineFailure(t *testing.T) {
	h := hookEngine{Engine: newEngine(t), before: func(context.Context) error { return errors.New("rank 1: all-reduce timed out") }}
	ts := start(t, Config{}, h)
	resp, body := ts.post(t, "/v1/chat/completions", map[string]any{"messages": chatMessages})
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	e := decode(t, string(body))["error"].(map[string]any)
	require.Equal(t, "server_error", e["type"])
	require.Equal(t, "engine_error", e["code"])
	require.Contains(t, e["message"], "rank 1: all-reduce timed out")

	resp = ts.open(t, "/v1/chat/completions", map[string]any{"messages": chatMessages, "stream": true})
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, _ := events(t, resp.Body)
	require.Len(t, data, 3, "role chunk, error, [DONE]: %q", data)
	require.Equal(t, "engine_error", decode(t, data[1])["error"].(map[string]any)["code"])
	require.Equal(t, "[DONE]", data[2])
	_, m := ts.get(t, "/metrics")
	require.Equal(t, "2", metricValue(string(m), `tpslice_http_requests_total{endpoint="/v1/chat/completions",status="503"}`))
}

// TestDisconnect: a client that leaves mid-stream cancels its generation in the engine,
// whose KV blocks return to the pool long before the generation could have ended.
func TestDisconnect(t *testing.T) {
	e := newModel(t, "demo")
	ts := start(t, Config{}, e)
	resp := ts.open(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 1000, "temperature": 0, "stream": true})
	r := bufio.NewReader(resp.Body)
	for range 3 {
		readEvent(t, r)
	}
	require.Positive(t, e.Blocks().InUse(), "the sequence holds its blocks while it streams")
	require.NoError(t, resp.Body.Close())

	eventually(t, func() bool {
		_, m := ts.get(t, "/metrics")
		return metricValue(string(m), `tpslice_http_requests_total{endpoint="/v1/completions",status="499"}`) == "1"
	}, "the stream ends as client-closed")
	require.Zero(t, e.Blocks().InUse(), "the KV blocks are back")
	_, m := ts.get(t, "/metrics")
	generated, err := strconv.Atoi(metricValue(string(m), "tpslice_generation_tokens_total"))
	require.NoError(t, err)
	require.Less(t, generated, 500, "the engine stopped the generation soon after the client left")
	require.Equal(t, "0", metricValue(string(m), "tpslice_requests_running"))
	require.Equal(t, "0", metricValue(string(m), "tpslice_engine_sequences_running"))
}

// TestPing: a stream silent for longer than the ping interval (a long prefill) gets
// ": ping" comments; a client that leaves during it is found by the pings.
func TestPing(t *testing.T) {
	e := newEngine(t)
	prefill := make(chan error, 1)
	h := hookEngine{Engine: e, before: func(ctx context.Context) error {
		select {
		case <-time.After(150 * time.Millisecond):
			return nil
		case <-ctx.Done():
			prefill <- ctx.Err()
			return ctx.Err()
		}
	}}
	ts := start(t, Config{PingInterval: 20 * time.Millisecond}, h)
	resp := ts.open(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 3, "temperature": 0, "stream": true})
	data, comments := events(t, resp.Body)
	resp.Body.Close()
	require.NotEmpty(t, comments)
	require.Equal(t, ": ping", comments[0])
	require.Equal(t, "[DONE]", data[len(data)-1])

	// A client that leaves during the silence: the pings fail and cancel the generation.
	resp = ts.open(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 3, "stream": true})
	require.NoError(t, resp.Body.Close())
	select {
	case err := <-prefill:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the generation was not cancelled")
	}
	eventually(t, func() bool {
		_, m := ts.get(t, "/metrics")
		return metricValue(string(m), `tpslice_http_requests_total{endpoint="/v1/completions",status="499"}`) == "1"
	}, "the stream ends as client-closed")
}

// readEvent reads up to and including the next data event.
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return strings.TrimSpace(d)
		}
	}
}

// refused reports whether a new connection to url's host is refused.
func refused(url string) bool {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

// TestShutdownFinishesStream: Shutdown stops accepting connections and lets a stream in
// flight finish.
func TestShutdownFinishesStream(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, hookEngine{Engine: e, delay: 10 * time.Millisecond})
	resp := ts.open(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 20, "temperature": 0, "stream": true})
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	readEvent(t, r)

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- ts.Shutdown(ctx)
	}()
	eventually(t, func() bool { return refused(ts.url) }, "new connections are refused")
	data, _ := events(t, r)
	require.Equal(t, "[DONE]", data[len(data)-1])
	last := decode(t, data[len(data)-2])
	require.Equal(t, "length", last["choices"].([]any)[0].(map[string]any)["finish_reason"])
	require.NoError(t, <-done)
	require.Zero(t, e.Blocks().InUse())
}

// TestShutdownEndsStream: when Shutdown's grace period ends first, the stream gets a final
// error event and [DONE], and its blocks are freed.
func TestShutdownEndsStream(t *testing.T) {
	e := newModel(t, "demo")
	ts := start(t, Config{}, e)
	// ignore_eos: a sampled EOS would end the stream before the grace period does.
	resp := ts.open(t, "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 1000, "ignore_eos": true, "stream": true})
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	readEvent(t, r) // the role
	readEvent(t, r) // a token: the generation runs

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.NoError(t, ts.Shutdown(ctx))
	data, _ := events(t, r)
	require.Less(t, len(data), 500, "the stream was ended, not finished")
	require.Equal(t, "[DONE]", data[len(data)-1])
	e503, ok := decode(t, data[len(data)-2])["error"].(map[string]any)
	require.True(t, ok, "the event before [DONE] is an error: %s", data[len(data)-2])
	require.Equal(t, "server_error", e503["type"])
	require.Equal(t, "shutting_down", e503["code"])
	require.Zero(t, e.Blocks().InUse())
}

// TestShutdownBeforeServe: a Shutdown that comes before Serve got going still stops it.
func TestShutdownBeforeServe(t *testing.T) {
	s, err := New(Config{})
	require.NoError(t, err)
	require.NoError(t, s.Shutdown(context.Background()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Serve(ln))
	require.True(t, refused("http://"+ln.Addr().String()))
}
