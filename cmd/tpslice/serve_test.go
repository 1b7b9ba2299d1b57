package main

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer that a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServe starts `tpslice serve` on a free port, runs the curl it prints (the API key
// from the environment), and stops it with a real SIGTERM: it returns nil, so the process
// exits 0.
func TestServe(t *testing.T) {
	t.Setenv(apiKeyEnv, "sk-serve")
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"serve", "--model", "tiny", "--tp", "2", "--port", "0", "--served-model-name", "tiny-2"}, &stdout, &stderr)
	}()
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
		default:
		}
		return strings.Contains(stdout.String(), "curl ")
	}, 20*time.Second, 10*time.Millisecond)

	out := stdout.String()
	m := regexp.MustCompile(`serving tiny-2 at TP=2 on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(out)
	require.NotNil(t, m, "%s", out)
	base := m[1]
	curl := strings.TrimSpace(out[strings.Index(out, "curl "):])
	require.Equal(t, `curl -N `+base+`/v1/completions -H 'Content-Type: application/json' -H "Authorization: Bearer $TPSLICE_API_KEY" `+
		`-d '{"max_tokens":32,"model":"tiny-2","prompt":"Hello my name is","stream":true}'`, curl)
	require.Contains(t, stderr.String(), "loading tiny at TP=2")

	resp, err := http.Get(base + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"Hi"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	if _, err := exec.LookPath("curl"); err == nil {
		got, err := exec.Command("sh", "-c", curl+" --silent --show-error --max-time 20").CombinedOutput()
		require.NoError(t, err, "%s", got)
		require.Contains(t, string(got), `"object":"text_completion"`)
		require.True(t, strings.HasSuffix(string(got), "data: [DONE]\n\n"), "%s", got)
	} else {
		t.Log("no curl on this machine: the printed command was checked, not run")
	}

	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case err := <-done:
		require.NoError(t, err, "%s", stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return after SIGTERM")
	}
	require.Contains(t, stderr.String(), "tpslice: stopped")
	_, err = net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second)
	require.Error(t, err, "the port is closed")
}

func TestServeBadFlags(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	busyPort := strings.TrimPrefix(busy.Addr().String(), "127.0.0.1:")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--port", "70000"}, "--port must be in [0, 65535], got 70000"},
		{[]string{"--port", busyPort}, "address already in use"},
		{[]string{"--host", "256.0.0.1", "--port", "0"}, "serve: listen tcp"},
		{[]string{"--max-waiting", "0"}, "--max-waiting must be at least 1, got 0"},
		{[]string{"--max-body-bytes", "12"}, "--max-body-bytes must be at least 1K, got 12"},
		{[]string{"--chat-template", "/nonexistent/chat.jinja"}, "--chat-template: open /nonexistent/chat.jinja"},
		{[]string{"--fused", "magic"}, `--fused: unknown fused all-reduce variant "magic"`},
		{[]string{"--model", "tiny", "--tp", "3", "--port", "0"}, "cannot shard over 3 ranks"},
		{[]string{"--model", "gpt-9", "--port", "0"}, `model "gpt-9" is neither a file or directory`},
		{[]string{"stray"}, `unexpected argument "stray"`},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			_, _, err := runCLI(t, append([]string{"serve"}, tc.args...)...)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestCurlCommand: the printed curl survives the shell with any model name, and reaches a
// server listening on every interface through loopback.
func TestCurlCommand(t *testing.T) {
	require.Equal(t, "127.0.0.1", curlHost("0.0.0.0"))
	require.Equal(t, "::1", curlHost("::"))
	require.Equal(t, "10.0.0.2", curlHost("10.0.0.2"))
	cmd := curlCommand("http://127.0.0.1:8000", `it's "odd"`, false)
	require.True(t, strings.HasPrefix(cmd, "curl -N http://127.0.0.1:8000/v1/completions "))
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this machine")
	}
	arg := cmd[strings.Index(cmd, " -d ")+4:]
	got, err := exec.Command("sh", "-c", "printf %s "+arg).Output()
	require.NoError(t, err)
	require.Equal(t, `{"max_tokens":32,"model":"it's \"odd\"","prompt":"Hello my name is","stream":true}`, string(got))
}
