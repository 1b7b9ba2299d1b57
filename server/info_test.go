package server

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHealthAndModels: /health is 503 until the engine is set and 200 after; /v1/models
// lists the served model.
func TestHealthAndModels(t *testing.T) {
	ts := start(t, Config{ModelName: "tiny-tp2"}, nil)
	resp, body := ts.get(t, "/health")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.JSONEq(t, `{"status":"loading"}`, string(body))
	resp, body = ts.post(t, "/v1/completions", map[string]any{"prompt": "Hi"})
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "model_loading", decode(t, string(body))["error"].(map[string]any)["code"])

	ts.SetEngine(newEngine(t))
	resp, body = ts.get(t, "/health")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"status":"ok"}`, string(body))

	resp, body = ts.get(t, "/v1/models")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got := decode(t, string(body))
	require.Equal(t, "list", got["object"])
	card := got["data"].([]any)[0].(map[string]any)
	require.Equal(t, "tiny-tp2", card["id"])
	require.Equal(t, "model", card["object"])
	require.Equal(t, "tpslice", card["owned_by"])
	require.Equal(t, 256.0, card["max_model_len"])
	require.Positive(t, card["created"])

	resp, body = ts.post(t, "/v1/completions", map[string]any{"model": "tiny-tp2", "prompt": "Hi", "max_tokens": 2})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
}

// TestMetrics scrapes /metrics after a few requests and finds every metric with the
// values those requests imply.
func TestMetrics(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{}, e)
	resp, body := ts.post(t, "/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": 5, "temperature": 0})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	resp, _ = ts.post(t, "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 3, "temperature": 0, "stream": true})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = ts.post(t, "/v1/completions", map[string]any{"prompt": "Hi", "n": 0})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	for _, id := range []string{"gpt-4", "no-such-model"} { // one label value for the route, not one an id
		resp, _ = ts.get(t, "/v1/models/"+id)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	}

	resp, raw := ts.get(t, "/metrics")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	m := string(raw)
	for _, name := range []string{
		"tpslice_http_requests_total", "tpslice_time_to_first_token_seconds", "tpslice_time_per_output_token_seconds",
		"tpslice_e2e_request_latency_seconds", "tpslice_requests_running", "tpslice_requests_waiting",
		"tpslice_kv_blocks_in_use", "tpslice_kv_blocks_total", "tpslice_prompt_tokens_total", "tpslice_generation_tokens_total",
		"tpslice_collective_calls_total", "tpslice_collective_bytes_total", "go_goroutines",
		"tpslice_num_preemptions_total", "tpslice_prefix_cache_queries_total", "tpslice_prefix_cache_hits_total",
	} {
		require.Contains(t, m, "# TYPE "+name+" ")
	}
	require.Equal(t, "1", metricValue(m, `tpslice_http_requests_total{endpoint="/v1/completions",status="200"}`))
	require.Equal(t, "1", metricValue(m, `tpslice_http_requests_total{endpoint="/v1/completions",status="400"}`))
	require.Equal(t, "1", metricValue(m, `tpslice_http_requests_total{endpoint="/v1/chat/completions",status="200"}`))
	require.Equal(t, "2", metricValue(m, `tpslice_http_requests_total{endpoint="/v1/models/",status="404"}`))
	require.NotContains(t, m, "gpt-4", "a requested model id must not become a label value")
	require.Equal(t, "2", metricValue(m, "tpslice_time_to_first_token_seconds_count"))
	require.Equal(t, "2", metricValue(m, "tpslice_time_per_output_token_seconds_count"))
	require.Equal(t, "8", metricValue(m, "tpslice_generation_tokens_total"))
	require.Equal(t, "0", metricValue(m, "tpslice_requests_running"))
	require.Equal(t, "0", metricValue(m, "tpslice_requests_waiting"))
	require.Equal(t, "0", metricValue(m, "tpslice_kv_blocks_in_use"))
	require.Equal(t, strconv.Itoa(e.Model().Options().KVBlocks), metricValue(m, "tpslice_kv_blocks_total"))
	// At TP 2 every all-reduce is one-shot (fused with the RMSNorm or not); sampling
	// all-gathers its candidates.
	calls, err := strconv.ParseFloat(metricValue(m, `tpslice_collective_calls_total{algorithm="oneshot",op="allreduce+rmsnorm"}`), 64)
	require.NoError(t, err, "%s", m)
	require.Positive(t, calls)
	bytes, err := strconv.ParseFloat(metricValue(m, `tpslice_collective_bytes_total{algorithm="oneshot",op="allreduce+rmsnorm"}`), 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, bytes, calls*64*4, "at least one f32 row of the 64-wide hidden state per call")
	require.NotContains(t, m, `algorithm="unrecorded"`)
}

// TestMetricsCountDecodeGraphReplays: a served decode replays the captured graph of its
// batch bucket, and /metrics counts it (a completion of 5 tokens is a prefill, run
// eagerly, and 4 decode steps of one sequence).
func TestMetricsCountDecodeGraphReplays(t *testing.T) {
	ts := start(t, Config{}, newEngine(t))
	const bucket1 = `tpslice_decode_graph_replays_total{batch="1"}`
	_, m := ts.get(t, "/metrics")
	require.Equal(t, "0", metricValue(string(m), bucket1), "%s", m)
	for _, stream := range []bool{false, true} {
		resp, body := ts.post(t, "/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": 5, "temperature": 0, "ignore_eos": true, "stream": stream})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	}
	_, m = ts.get(t, "/metrics")
	require.Equal(t, "8", metricValue(string(m), bucket1), "two requests' 4 decode steps each")
	require.Equal(t, "0", metricValue(string(m), `tpslice_decode_graph_replays_total{batch="2"}`))
}
