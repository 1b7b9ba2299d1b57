package server

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestContentTypes: a POST whose body is not JSON is answered 415 (as vLLM does) before
// anything reads it, multipart included; JSON with a charset, or no Content-Type, is read.
func TestContentTypes(t *testing.T) {
	ts := start(t, Config{}, newEngine(t))
	for _, ct := range []string{"text/plain", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded"} {
		resp, body := ts.post(t, "/v1/completions", `{"prompt": "Hi", "max_tokens": 1}`, "Content-Type", ct)
		require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "%s: %s", ct, body)
		require.Contains(t, string(body), "the body must be JSON", ct)
		require.NotContains(t, string(body), "multipart:", ct)
	}
	resp, body := ts.post(t, "/v1/completions", `{"prompt": "Hi", "max_tokens": 1}`, "Content-Type", "application/json; charset=utf-8")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
}

// TestNullPromptItem: a null inside prompt is a 400 naming it, not token 0.
func TestNullPromptItem(t *testing.T) {
	ts := start(t, Config{}, newEngine(t))
	for _, prompt := range []string{`[null]`, `[1, null]`} {
		resp, body := ts.post(t, "/v1/completions", `{"max_tokens": 1, "prompt": `+prompt+`}`)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
		var e struct {
			Error struct{ Message, Param string }
		}
		require.NoError(t, json.Unmarshal(body, &e))
		require.Equal(t, "prompt", e.Error.Param)
		require.Contains(t, e.Error.Message, "is null")
	}
}

// TestSlowHeaders: a client that never finishes its headers (slowloris) is answered 408
// once HeaderTimeout passes, and the answer quotes nothing it sent.
func TestSlowHeaders(t *testing.T) {
	ts := start(t, Config{}, newEngine(t))
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Secret-Header: sk-1234"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(HeaderTimeout+10*time.Second)))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&body)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, body.String())
	require.Less(t, time.Since(start), HeaderTimeout+5*time.Second)
	require.NotContains(t, body.String(), "sk-1234")
	require.NotContains(t, body.String(), "buffer size")
}

// TestRetrieveModel: GET /v1/models/{id} gives the served model's card, 404 for another.
func TestRetrieveModel(t *testing.T) {
	ts := start(t, Config{ModelName: "tiny-2"}, newEngine(t))
	resp, body := ts.get(t, "/v1/models/tiny-2")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var card struct {
		ID, Object  string
		MaxModelLen int `json:"max_model_len"`
	}
	require.NoError(t, json.Unmarshal(body, &card))
	require.Equal(t, "tiny-2", card.ID)
	require.Equal(t, "model", card.Object)
	require.Positive(t, card.MaxModelLen)
	resp, body = ts.get(t, "/v1/models/gpt-4")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, string(body), "model_not_found")
}
