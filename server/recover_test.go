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
				// The rebuild waits until the test has seen what a client sees meanwhile.
				rebuilding, release := make(chan struct{}), make(chan struct{})
				beganRebuild, releaseRebuild := sync.OnceFunc(func() { close(rebuilding) }), sync.OnceFunc(func() { close(release) })
				e, err := engine.New(engine.Config{Model: "tiny", TP: tp, MaxRunning: 4, CollectiveTimeout: timeout, Fault: fault,
					BeforeRebuild: func() { beganRebuild(); <-release }})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, e.Close()) })
				ts := start(t, Config{}, e)
				// Runs first: a failed test must not leave the engine held.
				t.Cleanup(releaseRebuild)
				client := &http.Client{Timeout: 30 * time.Second} // a call that has not ended by then is lost

				// ask returns the text of an answer, or the error code of a refusal.
				ask := func(stream bool) (text, code string, status int, err error) {
					body, _ := json.Marshal(map[string]any{"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "stream": stream})
					resp, err := client.Post(ts.url+"/v1/completions", "application/json", bytes.NewReader(body))
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
					data := []string{string(b)}
					if stream && resp.StatusCode == http.StatusOK {
						data, _ = events(t, bytes.NewReader(b))
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
				want, _, status, err := ask(false)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, status)

				var ok, inFlight, refused, lost, wrong atomic.Int64
				var stop atomic.Bool
				var wg sync.WaitGroup
				for c := range 8 {
					wg.Go(func() {
						for !stop.Load() {
							text, code, status, err := ask(c%2 == 0)
							switch {
							case err != nil:
								lost.Add(1)
							case status == http.StatusOK && text == want:
								ok.Add(1)
							case code == "engine_step_failed":
								inFlight.Add(1)
							case code == "engine_unavailable": // arrived while the group was rebuilt
								refused.Add(1)
								time.Sleep(10 * time.Millisecond) // as a client honouring Retry-After would, sooner
							default:
								wrong.Add(1)
							}
						}
					})
				}
				select {
				case <-rebuilding:
				case <-time.After(20 * time.Second):
					t.Fatal("no rebuild began: the fault failed no step")
				}
				resp, body := ts.get(t, "/health")
				require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "/health while rebuilding: %s", body)
				require.Equal(t, "1", resp.Header.Get("Retry-After"))
				_, code, status, err := ask(false)
				require.NoError(t, err)
				require.Equal(t, http.StatusServiceUnavailable, status)
				require.Equal(t, "engine_unavailable", code, "a request while rebuilding")
				releaseRebuild()
				require.Eventually(t, func() bool { return len(e.Recoveries()) == 1 && e.Health() == nil }, 20*time.Second, 10*time.Millisecond)
				okAtRecovery := ok.Load()
				require.Eventually(t, func() bool { return ok.Load() >= okAtRecovery+16 }, 20*time.Second, 10*time.Millisecond, "answers after the rebuild")
				stop.Store(true)
				wg.Wait()

				rec := e.Recoveries()[0]
				t.Logf("| %v | %d | %v | %v | %d ok | %d in flight failed | %d refused while rebuilding | %d lost |",
					kind, tp, rec.Detection.Round(time.Millisecond), rec.Rebuild.Round(time.Millisecond), ok.Load(), inFlight.Load(), refused.Load(), lost.Load())
				require.NoError(t, rec.RebuildErr)
				require.Less(t, rec.Detection, timeout+2*time.Second)
				require.Zero(t, lost.Load(), "every client call ended")
				require.Zero(t, wrong.Load(), "every answer is the greedy text")
				require.Equal(t, int64(rec.InFlight), inFlight.Load(), "only the requests in the failed step fail; the queued ones are answered")
				resp, body = ts.get(t, "/health")
				require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
				text, _, status, err := ask(true)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, status)
				require.Equal(t, want, text, "the same greedy text after the rebuild")
			})
		}
	}
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
