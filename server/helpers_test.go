package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/engine"
)

// newEngine loads the tiny preset at TP 2, closed when the test ends.
func newEngine(t testing.TB) *engine.Engine {
	t.Helper()
	return newModel(t, "tiny")
}

// newModel loads a preset at TP 2, closed when the test ends. The demo preset decodes
// slowly enough (a few ms per token, far more under -race) for a client to leave a
// generation the engine is still running.
func newModel(t testing.TB, preset string) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{Model: preset, TP: 2})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// testServer is a server on a loopback port.
type testServer struct {
	*Server
	url    string
	served chan error
}

// start serves e (nil: no engine yet) with cfg on 127.0.0.1:0 and shuts the server down
// when the test ends.
func start(t *testing.T, cfg Config, e Engine) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return startOn(t, ln, cfg, e)
}

// startOn is start on a listener of the test's own.
func startOn(t *testing.T, ln net.Listener, cfg Config, e Engine) *testServer {
	t.Helper()
	s, err := New(cfg)
	require.NoError(t, err)
	if e != nil {
		s.SetEngine(e)
	}
	ts := &testServer{Server: s, url: "http://" + ln.Addr().String(), served: make(chan error, 1)}
	go func() { ts.served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx) // a test may have shut it down already
		select {
		case err := <-ts.served:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after Shutdown")
		}
	})
	return ts
}

// post sends body (a string as is, anything else as JSON) and returns the response with
// its body read.
func (ts *testServer) post(t *testing.T, path string, body any, header ...string) (*http.Response, []byte) {
	t.Helper()
	resp := ts.open(t, path, body, header...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// open sends a POST and returns the response with its body unread.
func (ts *testServer) open(t *testing.T, path string, body any, header ...string) *http.Response {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case string:
		raw = []byte(b)
	default:
		var err error
		raw, err = json.Marshal(b)
		require.NoError(t, err)
	}
	req, err := http.NewRequest(http.MethodPost, ts.url+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// get sends a GET and returns the response with its body read.
func (ts *testServer) get(t *testing.T, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(ts.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// events reads a Server-Sent Events body: the data of every event ("[DONE]" included)
// and the comments (": ping").
func events(t *testing.T, r io.Reader) (data, comments []string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		case strings.HasPrefix(line, ":"):
			comments = append(comments, line)
		case line == "":
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	require.NoError(t, sc.Err())
	return data, comments
}

// decode unmarshals JSON into a map, for checking the exact wire format.
func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m), "%s", s)
	return m
}

// generate runs req directly on the engine: what the server must answer.
func generate(t *testing.T, e Engine, req engine.Request) engine.Result {
	t.Helper()
	res, err := e.Generate(context.Background(), req, func(engine.Token) error { return nil })
	require.NoError(t, err)
	return res
}

// hookEngine wraps an engine: before runs ahead of every generation (it may block or
// fail it), delay slows every token.
type hookEngine struct {
	*engine.Engine
	before func(ctx context.Context) error
	delay  time.Duration
}

func (h hookEngine) Generate(ctx context.Context, req engine.Request, emit func(engine.Token) error) (engine.Result, error) {
	if h.before != nil {
		if err := h.before(ctx); err != nil {
			return engine.Result{}, err
		}
	}
	return h.Engine.Generate(ctx, req, func(tok engine.Token) error {
		time.Sleep(h.delay)
		return emit(tok)
	})
}

// metricValue returns the value of the sample line that starts with prefix in a
// Prometheus text body, or "" when there is none.
func metricValue(body, prefix string) string {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line[len(prefix):])
		}
	}
	return ""
}

// eventually polls cond every few milliseconds for up to 10 s.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 5*time.Millisecond, msg)
}
