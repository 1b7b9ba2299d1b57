package server

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// holdConnections opens n connections to ts that each send part of a request and wait,
// as a slow client does; they close when the test ends.
func holdConnections(t *testing.T, ts *testServer, n int) {
	t.Helper()
	for range n {
		c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		_, err = c.Write([]byte("GET /health HTTP/1.1\r\n"))
		require.NoError(t, err)
	}
}

// requireConnectionRefusal checks a response is the API's JSON 503 of a full server, not
// fasthttp's plain text.
func requireConnectionRefusal(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "%s", body)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	e := decode(t, string(body))["error"].(map[string]any)
	require.Equal(t, "server_error", e["type"])
	require.Equal(t, "too_many_connections", e["code"])
	require.Contains(t, e["message"], "limit of 2 connections")
	require.NotContains(t, string(body), "Concurrency")
}

// TestMaxConnections: with MaxConnections open, a connection more still gets /health's
// 200, and the API's JSON 503 on any other route; past the reserve of such connections,
// every route gets the JSON 503. The listener accepts connections in the order they were
// made, so the held ones are counted before the probe's.
func TestMaxConnections(t *testing.T) {
	ts := start(t, Config{MaxConnections: 2}, newEngine(t))
	holdConnections(t, ts, 2)

	resp, body := ts.get(t, "/health")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.True(t, resp.Close, "a connection over the limit serves one request")
	resp, body = ts.get(t, "/v1/models")
	requireConnectionRefusal(t, resp, body)

	holdConnections(t, ts, healthReserve)
	for _, path := range []string{"/health", "/v1/models"} {
		resp, body = ts.get(t, path)
		requireConnectionRefusal(t, resp, body)
	}
}

// smallSendBuffers is a listener whose connections have a send buffer of a few KB, so that
// a client that stops reading blocks the server's writes after a few events, not after
// the megabytes a loopback socket would buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		err = c.(*net.TCPConn).SetWriteBuffer(4096)
	}
	return c, err
}

// TestStalledReader: a client that stops reading its stream has the connection closed
// once a write makes no progress for WriteTimeout; the stream's next event then fails,
// which cancels the generation and frees its KV blocks, as a client that leaves does.
// Without the deadline the stream would wait for the client forever.
func TestStalledReader(t *testing.T) {
	e := newModel(t, "demo")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ts := startOn(t, smallSendBuffers{ln}, Config{WriteTimeout: 200 * time.Millisecond}, e)

	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4096))
	const maxTokens = 1000
	body := fmt.Sprintf(`{"prompt": %q, "max_tokens": %d, "temperature": 0, "ignore_eos": true, "stream": true}`, prompt, maxTokens)
	_, err = fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err) // and nothing is read from c again

	closed := `tpslice_http_requests_total{endpoint="/v1/completions",status="499"}`
	require.Eventually(t, func() bool {
		_, m := ts.get(t, "/metrics")
		return metricValue(string(m), closed) == "1"
	}, 2*time.Minute, 10*time.Millisecond, "the stalled stream ends as client-closed")
	require.Zero(t, e.Blocks().InUse(), "the KV blocks are back")
	_, m := ts.get(t, "/metrics")
	generated, err := strconv.Atoi(metricValue(string(m), "tpslice_generation_tokens_total"))
	require.NoError(t, err)
	require.Less(t, generated, maxTokens, "the generation was cancelled, not finished")
	require.Equal(t, "0", metricValue(string(m), "tpslice_requests_running"))
}
