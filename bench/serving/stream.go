package serving

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// probeModel asks GET /v1/models, which also tells whether the server is reachable at all,
// and returns the model to request: o.Model, or the first one listed.
func probeModel(client *http.Client, o Options) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := apiRequest(ctx, o, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("cannot reach the server at %s (is `tpslice serve` running?): %w", o.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		if o.Model != "" && resp.StatusCode != http.StatusUnauthorized {
			return o.Model, nil // some servers list no models; the requests will tell
		}
		return "", fmt.Errorf("GET %s/v1/models: %s", o.URL, httpError(resp.StatusCode, body))
	}
	if o.Model != "" {
		return o.Model, nil
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", fmt.Errorf("GET %s/v1/models lists no model; name one with --model", o.URL)
	}
	return list.Data[0].ID, nil
}

// requestKeys numbers the requests' Idempotency-Keys.
var requestKeys atomic.Uint64

// apiRequest is a request to the server's API, with the API key; a body is JSON.
func apiRequest(ctx context.Context, o Options, method, path string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, o.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		// A server may close a kept-alive connection just as the next request goes out on
		// it (cpp-httplib, llama-server's, closes one after 5 requests): with this header
		// Go's transport sends the request again on a new connection when the old one
		// closed before any byte of a response, which the server then never acted on.
		req.Header.Set("Idempotency-Key", fmt.Sprint(requestKeys.Add(1)))
	}
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	return req, nil
}

// httpError describes a failed response from its status and OpenAI-style error body.
func httpError(status int, body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return fmt.Sprintf("HTTP %d %s: %s", status, http.StatusText(status), msg)
}

// streamCompletion sends one streamed completion and times its chunks; with cancelAfter
// > 0 it leaves after that many chunks (closing the connection).
func streamCompletion(client *http.Client, o Options, prompt any, seed uint64, cancelAfter int) (r requestResult) {
	req := map[string]any{
		"model": o.Model, "prompt": prompt, "max_tokens": o.MaxTokens, "seed": int64(seed),
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	}
	if o.Temperature >= 0 {
		req["temperature"] = o.Temperature
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	hreq, err := apiRequest(ctx, o, http.MethodPost, "/v1/completions", body)
	if err != nil {
		return requestResult{err: err}
	}
	start := time.Now()
	resp, err := client.Do(hreq)
	if err != nil {
		return requestResult{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return requestResult{err: errors.New(httpError(resp.StatusCode, b))}
	}
	var (
		last      time.Time
		chunks    int
		usageSeen bool
		finished  bool
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // blank lines between events, ": ping" comments
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			finished = true
			break
		}
		now := time.Now()
		var ev struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return requestResult{err: fmt.Errorf("a malformed event %.80q: %w", data, err)}
		}
		if ev.Error != nil {
			return requestResult{err: fmt.Errorf("error event: %s", ev.Error.Message)}
		}
		if len(ev.Choices) > 0 && ev.Choices[0].Text != "" {
			if chunks == 0 {
				r.ttft = now.Sub(start)
			} else {
				r.itl = append(r.itl, now.Sub(last))
			}
			last = now
			chunks++
			if chunks == cancelAfter {
				return requestResult{cancelled: true}
			}
		}
		if ev.Usage != nil {
			r.outputTokens, usageSeen = ev.Usage.CompletionTokens, true
		}
	}
	r.e2e = time.Since(start)
	if err := sc.Err(); err != nil {
		return requestResult{err: fmt.Errorf("reading the stream: %w", err)}
	}
	if !finished {
		return requestResult{err: errors.New("the stream ended without data: [DONE]")}
	}
	if !usageSeen {
		r.outputTokens = chunks // a server that ignores include_usage: one token a chunk
	}
	if chunks == 0 {
		r.ttft = r.e2e // every token's text was held back to the end
	}
	return r
}
