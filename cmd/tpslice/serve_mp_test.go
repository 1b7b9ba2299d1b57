//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/internal/testutil"
)

// cliCommand is tpslice args… as a process of its own (this test binary as the CLI), its
// temporary files under tmp.
func cliCommand(tmp string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCLIVar+"=1", "TMPDIR="+tmp)
	cmd.WaitDelay = 5 * time.Second // its workers share its output: one left alive must not hold Wait
	return cmd
}

// TestServeExecutorMPExits runs `tpslice serve --executor mp --tp 2` as a process, checks
// that it tells the story (the greedy text of --executor inproc, TestServeDefaultTellsTheStory's)
// from its two worker processes, and ends it: with SIGTERM it stops gracefully and exits 0,
// with SIGKILL it dies at once; either way its workers exit too (a SIGKILLed driver's by
// PR_SET_PDEATHSIG and the socket's hangup), and no file is left in its temporary directory.
func TestServeExecutorMPExits(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cmd := cliCommand(tmp, "serve", "--executor", "mp", "--tp", "2", "--port", "0")
			stderr := &testutil.SyncBuffer{}
			cmd.Stderr = stderr
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			base := servedURL(t, out, stderr)
			require.Equal(t, greedyStory, complete(t, base, 64))
			workers := childrenOf(t, cmd.Process.Pid)
			require.Len(t, workers, 2, "a worker process per rank")
			t.Cleanup(func() { // a failed test leaves no worker either
				for _, pid := range workers {
					if !exited(pid) {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})

			require.NoError(t, cmd.Process.Signal(sig))
			err = cmd.Wait()
			if sig == syscall.SIGTERM {
				require.NoError(t, err, "%s", stderr) // its workers exited too: they share its output
				require.Contains(t, stderr.String(), "tpslice: stopped")
			} else {
				var exit *exec.ExitError
				require.ErrorAs(t, err, &exit)
				require.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal())
			}
			for rank, pid := range workers {
				require.Eventually(t, func() bool { return exited(pid) }, 10*time.Second, 10*time.Millisecond, "rank %d (pid %d) exited", rank, pid)
			}
			left, err := filepath.Glob(filepath.Join(tmp, "*"))
			require.NoError(t, err)
			require.Empty(t, left, "no socket or directory is left in TMPDIR")
		})
	}
}

// servedURL reads serve's stdout until it prints where it serves, and keeps draining it.
func servedURL(t *testing.T, stdout io.Reader, stderr fmt.Stringer) string {
	t.Helper()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody reads past the address
			}
		}
		close(lines)
	}()
	re := regexp.MustCompile(`serving .* on (http://127\.0\.0\.1:\d+) `)
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "serve ended before it served:\n%s", stderr)
			if m := re.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-timeout:
			t.Fatalf("serve did not start within a minute:\n%s", stderr)
		}
	}
}

// complete asks the server at base for the greedy completion of "Once upon a time" in n
// tokens and returns its text.
func complete(t *testing.T, base string, n int) string {
	t.Helper()
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(fmt.Sprintf(`{"prompt": "Once upon a time", "max_tokens": %d, "temperature": 0}`, n)))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var r struct{ Choices []struct{ Text string } }
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	require.Len(t, r.Choices, 1)
	return r.Choices[0].Text
}

// childrenOf lists pid's children, of every thread.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	require.NoError(t, err)
	var kids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // a thread that exited meanwhile
		}
		require.NoError(t, err)
		for _, s := range strings.Fields(string(b)) {
			kid, err := strconv.Atoi(s)
			require.NoError(t, err)
			kids = append(kids, kid)
		}
	}
	return kids
}

// exited reports whether pid no longer runs: gone from the process table, or a zombie
// that whoever adopted it has not reaped yet.
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	_, rest, ok := strings.Cut(string(b), ") ") // the name, in parentheses, may hold spaces
	return ok && (strings.HasPrefix(rest, "Z") || strings.HasPrefix(rest, "X"))
}
