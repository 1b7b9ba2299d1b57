package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/internal/testutil"
)

const (
	// HAProxy's health check in the test: a replica is DOWN after checkFall failed checks
	// checkInter apart (haproxy.cfg's are 2 s and 3).
	checkInter = 200 * time.Millisecond
	checkFall  = 2

	clients     = 8                // concurrent clients, half of their requests streamed
	maxTokens   = 300              // a request takes a few hundred ms here: many are in flight at the kill
	callTimeout = 20 * time.Second // a client call that has not ended by then hung
)

// TestFailover runs haproxy.cfg in front of two replicas, kills one with SIGKILL under
// load, and checks what an operator relies on: the requests in flight on the dead replica
// end with an error and none hangs; once the health check has marked it DOWN, no request
// goes to it (HAProxy's log names the replica and the retries of every request) and every
// request succeeds.
func TestFailover(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		haproxy, err = exec.LookPath("/usr/sbin/haproxy") // Debian's, outside a user's PATH
	}
	if err != nil {
		t.Skip("haproxy is not installed (Debian: apt-get install haproxy; .ci/run installs it): skipping the scale-out test")
	}
	bin := buildTpslice(t)
	r1, r2 := startReplica(t, bin, "r1"), startReplica(t, bin, "r2")
	front, statsPort := freePort(t), freePort(t)
	lb := start(t, "haproxy", haproxy, "-db", "-f", writeConfig(t, front, statsPort, r1.port, r2.port))
	stats := fmt.Sprintf("http://127.0.0.1:%d/stats;csv", statsPort)
	waitFor(t, 10*time.Second, "HAProxy to mark both replicas UP", func() bool {
		s := serverStats(stats)
		return s["r1"].status == "UP" && s["r2"].status == "UP"
	})

	l := startLoad(t, fmt.Sprintf("http://127.0.0.1:%d", front))
	waitFor(t, 20*time.Second, "answered requests and two in flight on r1", func() bool {
		return l.answeredSince(time.Time{}) >= clients && serverStats(stats)["r1"].inFlight >= 2
	})
	killed := time.Now()
	r1.kill()
	gone := time.Now() // reaped: its sockets are closed
	waitFor(t, 10*time.Second, "HAProxy to mark r1 DOWN", func() bool {
		return strings.HasPrefix(serverStats(stats)["r1"].status, "DOWN")
	})
	down := time.Now()
	waitFor(t, 20*time.Second, "requests answered after r1 is DOWN", func() bool { return l.answeredSince(down) >= 2*clients })
	calls := l.stop()

	// HAProxy logs a request when it ends, except one it closed the client's keep-alive
	// connection on without an answer because its replica closed before answering (the
	// client sees EOF or a reset; HAProxy does not log what it did not answer).
	silent := func(c call) bool { return errors.Is(c.err, io.EOF) || errors.Is(c.err, syscall.ECONNRESET) }
	var routes map[int]route
	var unlogged []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		routes, unlogged = parseLog(lb.out.String()), nil
		for _, c := range calls {
			if _, ok := routes[c.id]; !ok && !silent(c) {
				unlogged = append(unlogged, fmt.Sprintf("request %d: %v", c.id, c.err))
			}
		}
		if len(unlogged) == 0 || time.Now().After(deadline) {
			break
		}
	}
	require.Empty(t, unlogged, "requests HAProxy did not log")

	type tally struct{ sent, ok, failed int }
	var before, inFlight, between, after tally
	deadFailed := 0   // in flight on r1 at the kill, ended with an error
	redispatched := 0 // sent to r1 before DOWN, answered by r2 after a refused connect
	for _, c := range calls {
		r, logged := routes[c.id]
		via := "not in HAProxy's log"
		if logged {
			via = fmt.Sprintf("HAProxy: %s, %d %s, retries %s", r.server, r.status, r.term, r.retries)
		}
		desc := fmt.Sprintf("request %d (stream %t, sent %v after the kill; %s): %v",
			c.id, c.stream, c.start.Sub(killed).Round(time.Millisecond), via, c.err)
		if errors.Is(c.err, context.DeadlineExceeded) {
			t.Errorf("hung: %s", desc)
		}
		phase := &after
		switch {
		case c.end.Before(killed):
			phase = &before
		case c.start.Before(gone):
			phase = &inFlight
		case c.start.Before(down):
			phase = &between
		}
		phase.sent++
		if c.err == nil {
			phase.ok++
		} else {
			phase.failed++
			t.Logf("failed: %s", desc)
		}
		switch phase {
		case &before:
			require.NoError(t, c.err, desc)
		case &inFlight:
			if c.err != nil {
				require.True(t, r.server == "r1" || !logged && silent(c), "only requests on the killed replica may fail: %s", desc)
				deadFailed++
			}
		case &between:
			if c.err == nil && strings.HasPrefix(r.retries, "+") {
				redispatched++
			}
		case &after:
			require.NoError(t, c.err, desc)
			require.True(t, logged && r.server == "r2" && r.retries == "0", "after r1 is DOWN, a request must go straight to r2: %s", desc)
		}
	}
	t.Logf("r1 killed with requests in flight (gone %v later); HAProxy marked it DOWN %v after the kill (check inter %v, fall %d)",
		gone.Sub(killed).Round(time.Millisecond), down.Sub(killed).Round(time.Millisecond), checkInter, checkFall)
	for _, p := range []struct {
		name string
		tally
	}{{"ended before the kill", before}, {"in flight at the kill", inFlight}, {"sent between the kill and DOWN", between}, {"sent after DOWN", after}} {
		t.Logf("%-31s sent %3d  ok %3d  failed %3d", p.name, p.sent, p.ok, p.failed)
	}
	t.Logf("%d of the requests in flight on r1 ended with an error; %d sent between the kill and DOWN were retried on r2 after a refused connect to r1",
		deadFailed, redispatched)
	require.Positive(t, deadFailed, "no request was in flight on r1 when it was killed")
}

// call is one client request and how it ended.
type call struct {
	id         int
	stream     bool
	start, end time.Time
	err        error
}

// load runs clients sending completions in a loop until stop.
type load struct {
	done  atomic.Bool
	next  atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	calls []call
}

func startLoad(t *testing.T, base string) *load {
	l := &load{}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for range clients {
		l.wg.Go(func() {
			for !l.done.Load() {
				c := call{id: int(l.next.Add(1)), start: time.Now()}
				c.stream = c.id%2 == 0
				c.err = complete(client, base, c.id, c.stream)
				c.end = time.Now()
				l.mu.Lock()
				l.calls = append(l.calls, c)
				l.mu.Unlock()
			}
		})
	}
	t.Cleanup(func() { l.stop() })
	return l
}

// stop ends the load and returns its calls; a call's own deadline bounds the wait.
func (l *load) stop() []call {
	l.done.Store(true)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// answeredSince counts the calls sent at or after start that succeeded.
func (l *load) answeredSince(start time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c.err == nil && !c.start.Before(start) {
			n++
		}
	}
	return n
}

// complete sends completion request id through the load balancer and reads the whole
// answer: nil only for a 200 whose JSON, or whose stream up to "data: [DONE]", carries a
// finish_reason.
func complete(client *http.Client, base string, id int, stream bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	body := fmt.Sprintf(`{"prompt":"Once upon a time","max_tokens":%d,"temperature":0.8,"stream":%t}`, maxTokens, stream)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/v1/completions?req=%d", base, id), strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { // read to the end, so that the connection is kept
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
		return fmt.Errorf("status %d: %s", resp.StatusCode, line)
	}
	var answer struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	finished := func() bool { return len(answer.Choices) > 0 && answer.Choices[0].FinishReason != "" }
	if !stream {
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
			return fmt.Errorf("reading the answer: %w", err)
		}
		if !finished() {
			return errors.New("an answer without finish_reason")
		}
		return nil
	}
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
		case data == "[DONE]":
			if !done {
				return errors.New("a stream without finish_reason")
			}
			return nil
		default:
			if err := json.Unmarshal([]byte(data), &answer); err != nil {
				return fmt.Errorf("event %q: %w", data, err)
			}
			done = done || finished()
		}
	}
	return fmt.Errorf("stream cut before data: [DONE] (%v)", sc.Err())
}

// route is what HAProxy's log line of a request says.
type route struct {
	server, term, retries string // retries: "+N" when redispatched
	status                int
}

// logLine matches option httplog's format: … frontend backend/server Tr/Tw/Tc/Tr/Ta status
// bytes cookies termination_state actconn/feconn/beconn/srv_conn/retries queues "request".
var logLine = regexp.MustCompile(` openai tpslice/(\S+) \S+ (-?\d+) \S+ \S+ \S+ (\S+) \d+/\d+/\d+/\d+/(\+?\d+) \d+/\d+ "POST /v1/completions\?req=(\d+) `)

// parseLog maps request ids to HAProxy's log lines of them.
func parseLog(log string) map[int]route {
	routes := map[int]route{}
	for _, m := range logLine.FindAllStringSubmatch(log, -1) {
		id, _ := strconv.Atoi(m[5])
		status, _ := strconv.Atoi(m[2])
		routes[id] = route{server: m[1], status: status, term: m[3], retries: m[4]}
	}
	return routes
}

// serverStat is one server's row of HAProxy's stats.
type serverStat struct {
	status   string // UP, DOWN, "UP 1/2" while failing checks, …
	inFlight int    // scur: current sessions
}

// serverStats reads the tpslice backend's servers from HAProxy's stats CSV (nil if it
// does not answer).
func serverStats(url string) map[string]serverStat {
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	r := csv.NewReader(resp.Body)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil || len(rows) == 0 {
		return nil
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[strings.TrimPrefix(name, "# ")] = i
	}
	servers := map[string]serverStat{}
	for _, row := range rows[1:] {
		if len(row) == len(rows[0]) && row[col["pxname"]] == "tpslice" {
			n, _ := strconv.Atoi(row[col["scur"]])
			servers[row[col["svname"]]] = serverStat{status: row[col["status"]], inFlight: n}
		}
	}
	return servers
}

// writeConfig writes haproxy.cfg with the test's ports and check intervals.
func writeConfig(t *testing.T, front, stats, r1, r2 int) string {
	b, err := os.ReadFile("haproxy.cfg")
	require.NoError(t, err)
	cfg := string(b)
	for _, r := range [][2]string{
		{"bind 127.0.0.1:8080", fmt.Sprintf("bind 127.0.0.1:%d", front)},
		{"bind 127.0.0.1:8404", fmt.Sprintf("bind 127.0.0.1:%d", stats)},
		{"inter 2s fall 3 rise 2", fmt.Sprintf("inter %dms fall %d rise 1", checkInter.Milliseconds(), checkFall)},
		{"server r1 127.0.0.1:8001", fmt.Sprintf("server r1 127.0.0.1:%d", r1)},
		{"server r2 127.0.0.1:8002", fmt.Sprintf("server r2 127.0.0.1:%d", r2)},
	} {
		require.Equal(t, 1, strings.Count(cfg, r[0]), "haproxy.cfg should have %q once, for the test to rewrite", r[0])
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

// buildTpslice builds the command into a temporary directory.
func buildTpslice(t *testing.T) string {
	goTool, err := exec.LookPath("go")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "tpslice")
	out, err := exec.Command(goTool, "build", "-o", bin, "../cmd/tpslice").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// replica is a `tpslice serve` process.
type replica struct {
	*proc
	port int
}

var servingLine = regexp.MustCompile(`serving \S+ at TP=\d+ on http://127\.0\.0\.1:(\d+) `)

// startReplica starts the embedded model at TP 1 on a free port and waits until it serves.
func startReplica(t *testing.T, bin, name string) replica {
	r := replica{proc: start(t, name, bin, "serve", "--tp", "1", "--port", "0")}
	waitFor(t, 30*time.Second, name+" to serve", func() bool {
		select {
		case <-r.exited:
			t.Fatalf("%s exited: %s", name, r.out.String())
		default:
		}
		m := servingLine.FindStringSubmatch(r.out.String())
		if m != nil {
			r.port, _ = strconv.Atoi(m[1])
		}
		return m != nil
	})
	return r
}

// proc is a process the test started; the test's cleanup kills it.
type proc struct {
	cmd    *exec.Cmd
	out    testutil.SyncBuffer // stdout and stderr
	exited chan struct{}
}

func start(t *testing.T, name string, args ...string) *proc {
	p := &proc{cmd: exec.Command(args[0], args[1:]...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	require.NoError(t, p.cmd.Start(), name)
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, p.out.String())
		}
	})
	return p
}

// kill ends the process with SIGKILL and waits for it.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
	}
}
