package main

import (
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/internal/testutil"
	"github.com/tpslice/tpslice/models/stories260k"
	"github.com/tpslice/tpslice/server"
)

// TestServe starts `tpslice serve` on a free port, runs the curl it prints (the API key
// from the environment), and stops it with a real SIGTERM: it returns nil, so the process
// exits 0.
func TestServe(t *testing.T) {
	t.Setenv(apiKeyEnv, "sk-serve")
	srv := startServe(t, "--model", "tiny", "--tp", "2", "--port", "0", "--served-model-name", "tiny-2")
	out := srv.stdout.String()
	m := regexp.MustCompile(`serving tiny-2 at TP=2 on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(out)
	require.NotNil(t, m, "%s", out)
	base := m[1]
	curl := strings.TrimSpace(out[strings.Index(out, "curl "):])
	require.Equal(t, `curl -N `+base+`/v1/completions -H 'Content-Type: application/json' -H "Authorization: Bearer $TPSLICE_API_KEY" `+
		`-d '{"max_tokens":64,"model":"tiny-2","prompt":"Once upon a time","stream":true,"temperature":0}'`, curl)
	require.Contains(t, srv.stderr.String(), "loading tiny at TP=2")

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
	srv.stop(t)
	_, err = net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second)
	require.Error(t, err, "the port is closed")
}

// greedyStory is stories260K's greedy 64 tokens after "Once upon a time", run.c's story.
const greedyStory = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. " +
	"She wanted to play with it, but it was too high.\nLily's mom said"

// TestServeDefaultTellsTheStory: with no model named, serve runs the embedded stories260K
// (make run's TP 8), and the request of the curl it prints streams run.c's greedy story.
func TestServeDefaultTellsTheStory(t *testing.T) {
	srv := startServe(t, "--tp", "8", "--port", "0")
	out := srv.stdout.String()
	m := regexp.MustCompile(`serving stories260K at TP=8 on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(out)
	require.NotNil(t, m, "%s", out)
	curl := strings.TrimSpace(out[strings.Index(out, "curl "):])
	body := curl[strings.Index(curl, "-d '")+4 : len(curl)-1]
	resp, err := http.Post(m[1]+"/v1/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	sse, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", sse)
	var text strings.Builder
	for _, line := range strings.Split(string(sse), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &chunk), data)
		for _, c := range chunk.Choices {
			text.WriteString(c.Text)
		}
	}
	require.Equal(t, greedyStory, text.String())
	srv.stop(t)
}

// servedCLI is a `tpslice serve` running in this process.
type servedCLI struct {
	stdout, stderr *testutil.SyncBuffer
	done           chan error
}

// startServe runs `tpslice serve args…` and waits until it prints its curl.
func startServe(t *testing.T, args ...string) servedCLI {
	t.Helper()
	srv := servedCLI{stdout: &testutil.SyncBuffer{}, stderr: &testutil.SyncBuffer{}, done: make(chan error, 1)}
	go func() { srv.done <- run(append([]string{"serve"}, args...), srv.stdout, srv.stderr) }()
	require.Eventually(t, func() bool {
		select {
		case err := <-srv.done:
			t.Fatalf("serve returned early: %v\n%s", err, srv.stderr.String())
		default:
		}
		return strings.Contains(srv.stdout.String(), "curl ")
	}, 20*time.Second, 10*time.Millisecond)
	return srv
}

// stop sends the process a real SIGTERM: serve returns nil, so the process would exit 0.
func (srv servedCLI) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case err := <-srv.done:
		require.NoError(t, err, "%s", srv.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return after SIGTERM")
	}
	require.Contains(t, srv.stderr.String(), "tpslice: stopped")
}

// TestServeCPUProfile: --cpuprofile writes the server's CPU profile (pprof's gzipped
// protocol buffer) when it stops.
func TestServeCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	srv := startServe(t, "--model", "tiny", "--port", "0", "--cpuprofile", path)
	srv.stop(t)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, b[:2], "a gzipped profile")
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
		{[]string{"--write-timeout", "0"}, "--write-timeout must be > 0 (negative: never), got 0"},
		{[]string{"--chat-template", "/nonexistent/chat.jinja"}, "--chat-template: open /nonexistent/chat.jinja"},
		{[]string{"--cpuprofile", "/nonexistent/cpu.pprof", "--port", "0"}, "--cpuprofile: open /nonexistent/cpu.pprof"},
		{[]string{"--fused", "magic"}, `--fused: unknown fused all-reduce variant "magic"`},
		{[]string{"--fused-select", "fastest"}, `--fused-select: want comm or tuned, got "fastest"`},
		{[]string{"--model", "tiny", "--tp", "3", "--port", "0"}, "cannot shard over 3 ranks"},
		{[]string{"--model", "gpt-9", "--port", "0"}, `model "gpt-9" is not a file, a directory or a built-in model (stories260K, the default`},
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
	require.Equal(t, `{"max_tokens":64,"model":"it's \"odd\"","prompt":"Once upon a time","stream":true,"temperature":0}`, string(got))
}

func TestServeSchedulerFlags(t *testing.T) {
	cfg, _, err := parseServeFlags([]string{"--model", "tiny"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, serveMaxBatchTokens, cfg.MaxBatchTokens, "serve's step budget")
	require.Zero(t, cfg.KVBlocks)
	require.False(t, cfg.NoPrefixCaching, "prefix caching is on by default")
	require.Equal(t, servePrefillSteps, cfg.PrefillSteps, "serve spreads prefills")
	require.Equal(t, servePrefillBurstRatio, cfg.PrefillBurstRatio, "serve takes a burst at the full budget")
	cfg, _, err = parseServeFlags([]string{"--model", "tiny", "--max-num-batched-tokens", "512", "--kv-blocks", "100", "--no-prefix-caching", "--max-running", "8", "--prefill-steps", "1", "--prefill-burst-ratio", "0.5"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 512, cfg.MaxBatchTokens, "vLLM's name of --max-batch-tokens")
	require.Equal(t, 100, cfg.KVBlocks)
	require.True(t, cfg.NoPrefixCaching)
	require.Equal(t, 8, cfg.MaxRunning)
	require.Equal(t, 1, cfg.PrefillSteps)
	require.Equal(t, 0.5, cfg.PrefillBurstRatio)
	_, _, err = parseServeFlags([]string{"--model", "tiny", "--kv-blocks", "-1"}, io.Discard)
	require.ErrorContains(t, err, "--kv-blocks must be ≥ 0")
	_, _, err = parseServeFlags([]string{"--model", "tiny", "--prefill-steps", "-2"}, io.Discard)
	require.ErrorContains(t, err, "--prefill-steps must be ≥ 0, got -2")
	for _, r := range []string{"-1", "NaN", "+Inf"} {
		_, _, err = parseServeFlags([]string{"--model", "tiny", "--prefill-burst-ratio", r}, io.Discard)
		require.ErrorContains(t, err, "--prefill-burst-ratio must be a number ≥ 0, got", r)
	}
}

// url is the base URL serve printed.
func (srv servedCLI) url(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(srv.stdout.String())
	require.NotNil(t, m, srv.stdout.String())
	return m[1]
}

// TestServeFlightDumpOnSIGUSR1: kill -USR1 writes every rank's last collectives to stderr.
func TestServeFlightDumpOnSIGUSR1(t *testing.T) {
	srv := startServe(t, "--tp", "2", "--port", "0")
	resp, err := http.Post(srv.url(t)+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "Once", "max_tokens": 2}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR1))
	require.Eventually(t, func() bool {
		out := srv.stderr.String()
		return strings.Contains(out, "SIGUSR1: the flight recorder") && strings.Contains(out, "rank 1: seq ")
	}, 10*time.Second, 10*time.Millisecond)
	srv.stop(t)
	for line := range strings.Lines(srv.stderr.String()) { // the dump ends its last line: the next log line has its own
		if strings.HasPrefix(line, "rank ") {
			require.NotContains(t, line, "tpslice:")
		}
	}
}

// TestServeExitsWhenTheRebuildFails: a failed step whose rebuild cannot reload the weights
// (the checkpoint is gone) ends serve with an error, so the process exits 1 for its
// supervisor to restart it.
func TestServeExitsWhenTheRebuildFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stories260K.bin")
	require.NoError(t, os.WriteFile(path, stories260k.Checkpoint, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tok512.bin"), stories260k.Tokenizer, 0o644))
	t.Setenv("TPSLICE_FAULT", "rank:1,call:30,kind:panic")
	srv := startServe(t, "--model", path, "--tp", "2", "--port", "0", "--collective-timeout", "1s")
	require.NoError(t, os.Remove(path))
	resp, err := http.Post(srv.url(t)+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 20}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	select {
	case err := <-srv.done:
		require.ErrorContains(t, err, "could not be rebuilt")
		require.Equal(t, 1, exitCode(err))
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return after the rebuild failed")
	}
	require.Contains(t, srv.stderr.String(), "WARN FAULT rebuild failed")
}

// TestServeHelp: serve's help says which routes the API key guards, as the server
// guards them, and what the write timeout does.
func TestServeHelp(t *testing.T) {
	_, stderr, err := runCLI(t, "serve", "-h")
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, stderr, `require "Authorization: Bearer KEY" on `+server.KeyedRoutes()+" (")
	for _, path := range []string{"/v1/", "/tokenize", "/detokenize", "/debug/flight"} {
		require.Contains(t, server.KeyedRoutes(), path)
	}
	require.Contains(t, stderr, "-write-timeout duration")
}
