package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/engine"
)

// TestRecoveryUnderLoad injects each fault at TP 2 and 8 while clients stream and wait for
// completions over HTTP: the requests in flight end with a 503 (an error event on a
// stream), /health answers 503 and a new request is refused while the group is rebuilt
// (the test holds the rebuild open until it has seen both) and 200 after, the requests
// that were queued are answered, none is lost (every client call ends, with an answer or
// an error), and every answer, before and after the fault, carries the same greedy text.
func TestRecoveryUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("fault × TP under load: skipped with -short")
	}
	const timeout = time.Second
	for _, tp := range []int{2, 8} {
		for _, kind := range []comm.FaultKind{comm.FaultStall, comm.FaultPanic, comm.FaultSkip, comm.FaultCorrupt} {
			t.Run(fmt.Sprintf("tp%d/%v", tp, kind), func(t *testing.T) {
				// 12 tokens of the baseline are 13 steps of 2·layers+2 collectives (tiny has 2
				// layers): the fault fires a few steps into the load.
				fault := comm.NewFaultInjector(comm.Fault{Rank: tp - 1, Call: 13*6 + 30, Kind: kind})
				hold := newRebuildHold()
				e, err := engine.New(engine.Config{Model: "tiny", TP: tp, MaxRunning: 4, CollectiveTimeout: timeout, Fault: fault,
					BeforeRebuild: hold.hook})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, e.Close()) })
				ts := start(t, Config{}, e)
				t.Cleanup(hold.release) // runs first: a failed test must not leave the engine held
				load := newRecoveryLoad(ts)
				want, _, status, err := load.ask(false)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, status)
				load.run(8, want)
				hold.await(t, 20*time.Second)
				load.requireRefusedWhileRebuilding(t)
				hold.release()
				rec := load.requireServesAgain(t, e, want)
				t.Logf("| %v | %d | %v | %v | %v |", kind, tp, rec.Detection.Round(time.Millisecond), rec.Rebuild.Round(time.Millisecond), load)
				require.Less(t, rec.Detection, timeout+2*time.Second)
			})
		}
	}
}

// rebuildHold holds an engine's rebuild open (its Config.BeforeRebuild is hook) until
// release, so that a test sees what a client sees meanwhile, however fast the rebuild is.
type rebuildHold struct {
	began, released chan struct{}
	begin, release  func()
	at              time.Time // when the rebuild began: right after the failed step's error
}

func newRebuildHold() *rebuildHold {
	h := &rebuildHold{began: make(chan struct{}), released: make(chan struct{})}
	h.begin = sync.OnceFunc(func() { h.at = time.Now(); close(h.began) })
	h.release = sync.OnceFunc(func() { close(h.released) })
	return h
}

func (h *rebuildHold) hook() {
	h.begin()
	<-h.released
}

// await waits until a rebuild began.
func (h *rebuildHold) await(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-h.began:
	case <-time.After(within):
		t.Fatal("no rebuild began: no step failed")
	}
}

// recoveryLoad is the clients of a recovery test: each asks for the same greedy
// completion, streamed or not, again and again, and counts how its calls end.
type recoveryLoad struct {
	ts     *testServer
	client *http.Client
	// ok: answered with the greedy text; inFlight: 503 engine_step_failed (in the failed
	// step); refused: 503 engine_unavailable (arrived while rebuilding); lost: no answer
	// (the call failed or did not end within the client's timeout); wrong: anything else.
	ok, inFlight, refused, lost, wrong atomic.Int64
	stop                               atomic.Bool
	wg                                 sync.WaitGroup
}

func newRecoveryLoad(ts *testServer) *recoveryLoad {
	return &recoveryLoad{ts: ts, client: &http.Client{Timeout: 30 * time.Second}} // a call that has not ended by then is lost
}

// ask returns the text of an answer, or the error code of a refusal.
func (l *recoveryLoad) ask(stream bool) (text, code string, status int, err error) {
	body, _ := json.Marshal(map[string]any{"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "stream": stream})
	resp, err := l.client.Post(l.ts.url+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", resp.StatusCode, err
	}
	type reply struct {
		Choices []struct{ Text string }
		Error   *struct{ Code string }
	}
	var data []string
	for line := range strings.Lines(string(b)) { // a stream's events, or the one JSON body
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			data = append(data, d)
		}
	}
	if !stream || resp.StatusCode != http.StatusOK {
		data = []string{string(b)}
	}
	var sb strings.Builder
	for _, d := range data {
		var r reply
		if d == "[DONE]" || json.Unmarshal([]byte(d), &r) != nil {
			continue
		}
		if r.Error != nil {
			return "", r.Error.Code, http.StatusServiceUnavailable, nil
		}
		if len(r.Choices) == 1 {
			sb.WriteString(r.Choices[0].Text)
		}
	}
	return sb.String(), "", resp.StatusCode, nil
}

// run starts n clients, every other one streaming, until end; want is the greedy text.
func (l *recoveryLoad) run(n int, want string) {
	for c := range n {
		l.wg.Go(func() {
			for !l.stop.Load() {
				text, code, status, err := l.ask(c%2 == 0)
				switch {
				case err != nil:
					l.lost.Add(1)
				case status == http.StatusOK && text == want:
					l.ok.Add(1)
				case code == "engine_step_failed":
					l.inFlight.Add(1)
				case code == "engine_unavailable": // arrived while the group was rebuilt
					l.refused.Add(1)
					time.Sleep(10 * time.Millisecond) // as a client honouring Retry-After would, sooner
				default:
					l.wrong.Add(1)
				}
			}
		})
	}
}

// end stops the clients once their calls in flight ended.
func (l *recoveryLoad) end() {
	l.stop.Store(true)
	l.wg.Wait()
}

func (l *recoveryLoad) String() string {
	return fmt.Sprintf("%d ok | %d in flight failed | %d refused while rebuilding | %d lost", l.ok.Load(), l.inFlight.Load(), l.refused.Load(), l.lost.Load())
}

// requireRefusedWhileRebuilding checks what a client sees while the engine rebuilds: /health
// answers 503 with a Retry-After, and a new request is refused with engine_unavailable.
func (l *recoveryLoad) requireRefusedWhileRebuilding(t *testing.T) {
	t.Helper()
	resp, body := l.ts.get(t, "/health")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "/health while rebuilding: %s", body)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	_, code, status, err := l.ask(false)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "engine_unavailable", code, "a request while rebuilding")
}

// requireServesAgain waits, once the rebuild was released, for e's one recovery to end and
// for 16 more answers, ends the load and checks it: nothing lost, nothing wrong, only the
// failed step's requests failed, /health answers 200 and a stream the greedy text. It
// returns the recovery.
func (l *recoveryLoad) requireServesAgain(t *testing.T, e *engine.Engine, want string) engine.Recovery {
	t.Helper()
	require.Eventually(t, func() bool { return len(e.Recoveries()) == 1 && e.Health() == nil }, 20*time.Second, 10*time.Millisecond)
	okAtRecovery := l.ok.Load()
	require.Eventually(t, func() bool { return l.ok.Load() >= okAtRecovery+16 }, 20*time.Second, 10*time.Millisecond, "answers after the rebuild")
	l.end()
	rec := e.Recoveries()[0]
	require.NoError(t, rec.RebuildErr)
	require.Zero(t, l.lost.Load(), "every client call ended")
	require.Zero(t, l.wrong.Load(), "every answer is the greedy text")
	require.Equal(t, int64(rec.InFlight), l.inFlight.Load(), "only the requests in the failed step fail; the queued ones are answered")
	resp, body := l.ts.get(t, "/health")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	text, _, status, err := l.ask(true)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, want, text, "the same greedy text after the rebuild")
	require.Len(t, e.Recoveries(), 1, "one failure, one recovery")
	return rec
}

// TestFlightEndpoint: GET /debug/flight lists the last collectives of every rank, behind
// the API key.
func TestFlightEndpoint(t *testing.T) {
	e := newEngine(t)
	ts := start(t, Config{APIKey: "k"}, e)
	resp, _ := ts.get(t, "/debug/flight")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_, _ = ts.post(t, "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 2}, "Authorization", "Bearer k")
	req, err := http.NewRequest(http.MethodGet, ts.url+"/debug/flight?last=2", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer k")
	r, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode, string(b))
	for rank := range 2 {
		require.Contains(t, string(b), fmt.Sprintf("rank %d: seq ", rank))
	}
	require.Len(t, strings.Split(strings.TrimSpace(string(b)), "\n"), 4, "two calls of each of two ranks:\n%s", b)
}
