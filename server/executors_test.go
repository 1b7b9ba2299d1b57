package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/engine"
)

// executors are the two ways an engine runs its ranks: goroutines of this process, and a
// worker process per rank (engine.Config.Processes, the CLI's --executor mp).
var executors = []struct {
	name      string
	processes bool
}{{"inproc", false}, {"mp", true}}

// newEngineOn is newEngine (tiny at TP 2, closed when the test ends) on an executor.
func newEngineOn(t *testing.T, processes bool) *engine.Engine {
	t.Helper()
	if processes && runtime.GOOS != "linux" {
		t.Skip("worker processes (--executor mp) need Linux")
	}
	e, err := engine.New(engine.Config{Model: "tiny", TP: 2, Processes: processes})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// exchange is one request of TestServeExecutors.
type exchange struct {
	name, path string
	body       map[string]any
}

// executorExchanges are the HTTP behaviour both executors must agree on: completions
// greedy and seeded, chat, streams, logprobs, a stop string, n > 1.
var executorExchanges = []exchange{
	{"completion greedy", "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 12, "temperature": 0}},
	{"completion seeded", "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 12, "temperature": 0.9, "top_p": 0.9, "seed": 7}},
	{"completion stream", "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 10, "temperature": 0, "stop": "Bu", "stream": true,
		"stream_options": map[string]any{"include_usage": true}}},
	{"completion logprobs", "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 6, "temperature": 1, "seed": 4, "logprobs": 3, "n": 2}},
	{"chat", "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_completion_tokens": 9, "temperature": 0}},
	{"chat stream logprobs", "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 6, "temperature": 1, "seed": 4,
		"logprobs": true, "top_logprobs": 3, "stream": true}},
}

// TestServeExecutors serves the tiny preset at TP 2 with each executor and requires the
// worker processes' answers to be those of the in-process ranks, byte for byte but for
// the ids and timestamps: each exchange alone, then all of them again at once with 10
// greedy completions (half streamed, batched by the scheduler), each answering as alone;
// /health answers 200, /metrics counts the same requests and tokens and the same
// collective series (rank 0's, counted in its worker under mp) in the same proportions,
// and decode steps replay graphs (in the workers, under mp).
func TestServeExecutors(t *testing.T) {
	answers := map[string][]string{}
	metrics := map[string][]string{}
	collectives := map[string]map[string]string{}
	for _, ex := range executors {
		t.Run(ex.name, func(t *testing.T) {
			ts := start(t, Config{}, newEngineOn(t, ex.processes))
			resp, body := ts.get(t, "/health")
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			var got []string
			for _, x := range executorExchanges {
				resp, body := ts.post(t, x.path, x.body)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", x.name, body)
				got = append(got, x.name+": "+normalizeAnswer(t, body))
			}
			bodies := make([]string, 16)
			var wg sync.WaitGroup
			for i := range bodies {
				wg.Go(func() { // no require here: FailNow must run on the test's goroutine
					var x exchange
					if i < len(executorExchanges) {
						x = executorExchanges[i]
					} else {
						x = exchange{path: "/v1/completions", body: map[string]any{"prompt": fmt.Sprint(prompt, " ", i), "max_tokens": 8,
							"temperature": 0, "stream": i%2 == 1}}
					}
					raw, _ := json.Marshal(x.body)
					resp, err := http.Post(ts.url+x.path, "application/json", bytes.NewReader(raw))
					if err != nil {
						bodies[i] = err.Error()
						return
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					bodies[i] = fmt.Sprint(resp.StatusCode, " ", string(b))
				})
			}
			wg.Wait()
			for i, b := range bodies {
				status, body, _ := strings.Cut(b, " ")
				require.Equal(t, "200", status, "concurrent request %d: %s", i, b)
				got = append(got, fmt.Sprint("concurrent ", i, ": ", normalizeAnswer(t, []byte(body))))
			}
			for i := range executorExchanges { // batched with others, each answers as alone
				require.Equal(t, got[i], strings.Replace(got[len(executorExchanges)+i], fmt.Sprint("concurrent ", i), executorExchanges[i].name, 1))
			}
			answers[ex.name] = got
			_, m := ts.get(t, "/metrics")
			for _, prefix := range []string{`tpslice_http_requests_total{endpoint="/v1/completions",status="200"}`,
				`tpslice_http_requests_total{endpoint="/v1/chat/completions",status="200"}`, "tpslice_generation_tokens_total",
				"tpslice_prompt_tokens_total", "tpslice_engine_step_failures_total"} {
				v := metricValue(string(m), prefix)
				require.NotEmpty(t, v, "%s in /metrics:\n%s", prefix, m)
				metrics[ex.name] = append(metrics[ex.name], prefix+" "+v)
			}
			require.NotEqual(t, "0", metricValue(string(m), `tpslice_decode_graph_replays_total{batch="1"}`), "%s", m)
			collectives[ex.name] = collectiveShape(t, string(m))
		})
	}
	if len(answers) == len(executors) {
		require.Equal(t, answers["inproc"], answers["mp"], "worker processes answer as the in-process ranks do")
		require.Equal(t, metrics["inproc"], metrics["mp"])
		require.Equal(t, collectives["inproc"], collectives["mp"], "rank 0's collectives, counted in its worker under mp")
	}
}

// collectiveShape reads the collective series of /metrics (m) and returns, by series, what
// does not depend on how the scheduler batched the requests (the calls' sizes do): each
// op's calls per call of the op called least (every step issues the same collectives: 5
// all-reduces a gather on tiny). Every series is there for calls and bytes, and counts at
// least one call of at least 4 bytes.
func collectiveShape(t *testing.T, m string) map[string]string {
	t.Helper()
	calls, bytes := map[string]float64{}, map[string]float64{}
	for _, line := range strings.Split(m, "\n") {
		for name, into := range map[string]map[string]float64{"tpslice_collective_calls_total": calls, "tpslice_collective_bytes_total": bytes} {
			if labels, ok := strings.CutPrefix(line, name); ok {
				series, value, _ := strings.Cut(labels, " ")
				v, err := strconv.ParseFloat(value, 64)
				require.NoError(t, err, "%s", line)
				into[series] = v
			}
		}
	}
	require.NotEmpty(t, calls, "collective calls in /metrics:\n%s", m)
	least := math.Inf(1)
	for series, n := range calls {
		require.Contains(t, bytes, series, "bytes beside the calls")
		require.Positive(t, n, "%s calls", series)
		require.GreaterOrEqual(t, bytes[series], 4*n, "%s: at least a float32 a call", series)
		least = min(least, n)
	}
	require.Len(t, bytes, len(calls), "calls beside the bytes")
	shape := map[string]string{}
	for series, n := range calls {
		shape[series] = fmt.Sprintf("%.3f calls per step", n/least)
	}
	return shape
}

// normalizeAnswer is a response body (JSON, or a stream's events) without what differs
// between two identical generations: each object's id and creation time.
func normalizeAnswer(t *testing.T, body []byte) string {
	t.Helper()
	data := []string{string(body)}
	if bytes.HasPrefix(body, []byte("data: ")) {
		data, _ = events(t, bytes.NewReader(body))
	}
	var out []string
	for _, d := range data {
		if d == "[DONE]" {
			out = append(out, d)
			continue
		}
		m := decode(t, d)
		delete(m, "id")
		delete(m, "created")
		b, err := json.Marshal(m)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}
