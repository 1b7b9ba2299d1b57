package serving

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeServer answers /v1/models with one model and streams every completion as two text
// chunks and a usage chunk counting 5 tokens (as a server whose chunks hold several
// tokens does); it records the model each request named. wrap, if given, stands between
// the server and those handlers.
func fakeServer(t *testing.T, models chan<- string, wrap ...func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"data":[{"id":"fake-model"}]}`)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		models <- req.Model
		for _, ev := range []string{`{"choices":[{"text":"Once"}]}`, `{"choices":[{"text":" upon"}]}`, `{"choices":[],"usage":{"completion_tokens":5}}`, `[DONE]`} {
			fmt.Fprintf(w, "data: %s\n\n", ev)
		}
	})
	var h http.Handler = mux
	for _, w := range wrap {
		h = w(h)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// TestRunAgainstAFakeServer calls Run as a program would: the model comes from
// /v1/models and the output tokens from the stream's usage, not its chunk count.
func TestRunAgainstAFakeServer(t *testing.T) {
	models := make(chan string, 3)
	s := fakeServer(t, models)
	rep, err := Run(Options{URL: s.URL + "/", NumPrompts: 3, Concurrency: 2, PromptLen: 4, MaxTokens: 8,
		Temperature: -1, Timeout: time.Minute, SampleEvery: time.Second})
	require.NoError(t, err)
	require.Equal(t, "fake-model", rep.Model)
	require.Equal(t, s.URL, rep.URL, "the trailing slash is trimmed")
	require.Equal(t, 3, rep.Completed, rep.FirstError)
	require.Equal(t, 3*5, rep.OutputTokens, "usage's completion_tokens, not one a chunk")
	require.Nil(t, rep.Temperature, "a negative temperature is not sent")
	close(models)
	for m := range models {
		require.Equal(t, "fake-model", m)
	}
}

// TestRunRefusesBadOptions: options that would block the load (no concurrency) or send
// nothing are refused before any request, naming bench-serve's flag.
func TestRunRefusesBadOptions(t *testing.T) {
	ok := Options{URL: "http://127.0.0.1:1", NumPrompts: 1, Concurrency: 1, PromptLen: 1, MaxTokens: 1, Timeout: time.Second, SampleEvery: time.Second}
	for _, tc := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Concurrency = 0 }, "--concurrency must be at least 1, got 0"},
		{func(o *Options) { o.NumPrompts = 0 }, "--num-prompts must be at least 1, got 0"},
		{func(o *Options) { o.URL = "localhost:8000" }, "--url must be an http:// or https:// URL"},
	} {
		o := ok
		tc.edit(&o)
		_, err := Run(o)
		require.ErrorContains(t, err, tc.want)
	}
}

// TestRunResendsWhatAClosedConnectionDropped: a server that closes a kept-alive connection
// as the next completion arrives on it, without answering (cpp-httplib's keep-alive limit,
// llama-server's), loses no request: each is sent again on a new connection.
func TestRunResendsWhatAClosedConnectionDropped(t *testing.T) {
	var mu sync.Mutex
	served := map[string]int{} // completions by client address
	s := fakeServer(t, make(chan string, 8), func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				mu.Lock()
				served[r.RemoteAddr]++
				second := served[r.RemoteAddr] > 1
				mu.Unlock()
				if second {
					_, _ = io.Copy(io.Discard, r.Body)
					conn, _, err := http.NewResponseController(w).Hijack()
					require.NoError(t, err)
					require.NoError(t, conn.Close())
					return
				}
			}
			inner.ServeHTTP(w, r)
		})
	})
	rep, err := Run(Options{URL: s.URL, NumPrompts: 4, Concurrency: 1, PromptLen: 4, MaxTokens: 8,
		Temperature: -1, Timeout: time.Minute, SampleEvery: time.Second})
	require.NoError(t, err)
	require.Equal(t, 4, rep.Completed, rep.FirstError)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, served, 4, "every completion after a connection's first went again on a new one")
}
