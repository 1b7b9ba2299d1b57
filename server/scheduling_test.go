package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/engine"
)

// TestSchedulingOverHTTP: through the API, 32 concurrent completions (half streamed, some
// sampled with a seed) on a KV cache of one context's blocks under a 24-token step budget
// are preempted, chunked and served from the prefix cache, and every one's text is the
// text it gets alone on an engine with none of that (prefix caching off, the default
// budget and pool).
func TestSchedulingOverHTTP(t *testing.T) {
	type req struct {
		ids       []int32
		maxTokens int
		sampled   bool
	}
	ids := func(n, salt int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(1 + (i*37+salt*11)%500)
		}
		return out
	}
	var reqs []req
	shared := ids(40, 0)
	for i := range 8 { // a shared 40-token prefix: prefix-cache hits
		reqs = append(reqs, req{ids: append(append([]int32{}, shared...), int32(9+i)), maxTokens: 10 + i})
	}
	for i := range 23 { // growing sequences: preemptions
		reqs = append(reqs, req{ids: ids(12+i%5, i+1), maxTokens: 20 + i%3*5, sampled: i%4 == 3})
	}
	reqs = append(reqs, req{ids: ids(130, 99), maxTokens: 6}) // many chunks of 24; one prompt of 130 ids, not 130 prompts

	ask := func(url string, i int, r req) string {
		body := map[string]any{"prompt": r.ids, "max_tokens": r.maxTokens, "temperature": 0, "stream": i%2 == 0}
		if r.sampled {
			body["temperature"], body["top_k"], body["seed"] = 0.8, 20, i
		}
		b, _ := json.Marshal(body)
		resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
		chunks := []string{string(raw)}
		if i%2 == 0 {
			chunks, _ = events(t, bytes.NewReader(raw))
		}
		var text strings.Builder
		for _, c := range chunks {
			var out struct{ Choices []struct{ Text string } }
			if c != "[DONE]" && json.Unmarshal([]byte(c), &out) == nil && len(out.Choices) == 1 {
				text.WriteString(out.Choices[0].Text)
			}
		}
		return text.String()
	}

	ref, err := engine.New(engine.Config{Model: "tiny", TP: 2, NoPrefixCaching: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ref.Close()) })
	refSrv := start(t, Config{}, ref)
	want := make([]string, len(reqs))
	for i, r := range reqs {
		want[i] = ask(refSrv.url, i, r)
	}

	perSeq := (ref.Model().Config().ContextLength + engine.BlockSize - 1) / engine.BlockSize
	e, err := engine.New(engine.Config{Model: "tiny", TP: 2, KVBlocks: perSeq, MaxBatchTokens: 24})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	ts := start(t, Config{}, e)
	got := make([]string, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() { got[i] = ask(ts.url, i, r) })
	}
	wg.Wait()
	for i := range reqs {
		require.Equal(t, want[i], got[i], "request %d", i)
	}

	_, metrics := ts.get(t, "/metrics")
	counter := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(metrics)
		require.NotNil(t, m, name)
		v, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		return v
	}
	preempted, hits := counter("tpslice_num_preemptions_total"), counter("tpslice_prefix_cache_hits_total")
	t.Log(fmt.Sprintf("preemptions %v, prefix-cache hits %v tokens", preempted, hits))
	require.Positive(t, preempted)
	require.Positive(t, hits)
	require.Zero(t, e.Blocks().InUse())
}
