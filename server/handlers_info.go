package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/engine"
)

// models serves GET /v1/models: the one model served.
func (s *Server) models(rc *fasthttp.RequestCtx, l *loaded, _ time.Time) *apiError {
	writeJSON(rc, modelList{Object: "list", Data: []modelCard{s.card(l)}})
	return nil
}

// model serves GET /v1/models/{id}: the served model's card, or 404 for any other id.
func (s *Server) model(rc *fasthttp.RequestCtx, l *loaded, _ time.Time) *apiError {
	if id := strings.TrimPrefix(string(rc.Path()), "/v1/models/"); id != l.name {
		return modelNotFound(id, l.name)
	}
	writeJSON(rc, s.card(l))
	return nil
}

// card describes the served model as OpenAI's model object (with vLLM's max_model_len).
func (s *Server) card(l *loaded) modelCard {
	return modelCard{ID: l.name, Object: "model", Created: s.created, OwnedBy: "tpslice", MaxModelLen: l.contextLen}
}

// health serves GET /health: 200 once the engine is loaded (its ranks are up and its
// decode graphs captured: engine.New returns only then), 503 while it loads, after its
// communicator failed, and while the server shuts down.
func (s *Server) health(rc *fasthttp.RequestCtx, _ *loaded, _ time.Time) *apiError {
	status, code := "ok", http.StatusOK
	l := s.eng.Load()
	switch {
	case s.draining.Load():
		status, code = "shutting down", http.StatusServiceUnavailable
	case l == nil:
		status, code = "loading", http.StatusServiceUnavailable
	default:
		if h, ok := l.e.(healthReporter); ok && h.Health() != nil {
			status, code = "rebuilding the TP group after a failed step", http.StatusServiceUnavailable
			rc.Response.Header.Set("Retry-After", "1")
			select {
			case <-h.Failed():
				status = "failed: the TP group could not be rebuilt"
				rc.Response.Header.Del("Retry-After")
			default:
			}
		}
	}
	rc.SetStatusCode(code)
	writeJSON(rc, map[string]string{"status": status})
	return nil
}

// flight serves GET /debug/flight (behind the API key): the flight recorder's last
// collectives of every rank (?last=N, default all it holds), as text, one call per line.
func (s *Server) flight(rc *fasthttp.RequestCtx, l *loaded, _ time.Time) *apiError {
	fr, ok := l.e.(flightRecorder)
	if !ok {
		return &apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "unknown_url", Message: "this engine keeps no flight recorder"}
	}
	last := 0
	if v := rc.QueryArgs().Peek("last"); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 {
			return &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Param: "last", Message: fmt.Sprintf("last must be a count of calls ≥ 0, got %q", clip(v))}
		}
		last = n
	}
	rc.SetContentType("text/plain; charset=utf-8")
	rc.SetBodyString(fr.Flight(last).String() + "\n")
	if recs := fr.Recoveries(); len(recs) > 0 { // the group that failed last, as it stood
		fmt.Fprintf(rc, "\nthe TP group of the last failed step (%d failed steps so far):\n%v\n", len(recs), recs[len(recs)-1].Flight)
	}
	return nil
}

// healthReporter is an engine that can fail and rebuild (*engine.Engine does): Health is
// nil while it serves; Failed is closed once it cannot serve again.
type healthReporter interface {
	Health() error
	Failed() <-chan struct{}
}

// flightRecorder is an engine that keeps its ranks' last collectives (*engine.Engine does).
type flightRecorder interface {
	Flight(last int) comm.Flight
	Recoveries() []engine.Recovery
}

// serveMetrics serves GET /metrics in the Prometheus text format.
func (s *Server) serveMetrics(rc *fasthttp.RequestCtx, _ *loaded, _ time.Time) *apiError {
	s.metrics.handler(rc)
	return nil
}
