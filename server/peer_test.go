package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawCompletion is a non-streaming POST /v1/completions as bytes on the wire.
func rawCompletion(maxTokens int) string {
	body := fmt.Sprintf(`{"prompt": %q, "max_tokens": %d, "temperature": 0}`, prompt, maxTokens)
	return fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// TestNonStreamingDisconnect: a client that closes its connection during a non-streaming
// completion cancels the generation within a second: the engine runs nothing and holds no
// KV blocks long before max_tokens could have been reached.
func TestNonStreamingDisconnect(t *testing.T) {
	e := newModel(t, "demo")
	ts := start(t, Config{}, e)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	require.NoError(t, err)
	_, err = conn.Write([]byte(rawCompletion(1000)))
	require.NoError(t, err)
	eventually(t, func() bool { r, _ := e.Load(); return r == 1 }, "the sequence runs")
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, conn.Close())

	require.Eventually(t, func() bool {
		r, w := e.Load()
		return r == 0 && w == 0 && e.Blocks().InUse() == 0
	}, 2*time.Second, 10*time.Millisecond, "the engine retires the sequence and frees its KV blocks")
	eventually(t, func() bool {
		_, m := ts.get(t, "/metrics")
		return metricValue(string(m), `tpslice_http_requests_total{endpoint="/v1/completions",status="499"}`) == "1"
	}, "the request counts as client-closed")
}

// TestNonStreamingPipelined: clients that stay connected get their answers, requests
// pipelined behind the one generating included, and the connection stays usable.
func TestNonStreamingPipelined(t *testing.T) {
	ts := start(t, Config{}, newModel(t, "demo"))
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	read := func() {
		t.Helper()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(60*time.Second)))
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		var c struct {
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		require.NoError(t, json.Unmarshal(body, &c))
		require.Positive(t, c.Usage.CompletionTokens)
	}
	// Long enough (demo: a few ms a token) for the watcher to look at the socket while
	// the second request waits in it.
	_, err = conn.Write([]byte(rawCompletion(64) + rawCompletion(64)))
	require.NoError(t, err)
	read()
	read()
	_, err = conn.Write([]byte(rawCompletion(16))) // kept alive
	require.NoError(t, err)
	read()
}
