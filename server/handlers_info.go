package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
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
		if err := l.e.Model().Group().Comm().Err(); err != nil {
			status, code = "failed: "+err.Error(), http.StatusServiceUnavailable
		}
	}
	rc.SetStatusCode(code)
	writeJSON(rc, map[string]string{"status": status})
	return nil
}

// serveMetrics serves GET /metrics in the Prometheus text format.
func (s *Server) serveMetrics(rc *fasthttp.RequestCtx, _ *loaded, _ time.Time) *apiError {
	s.metrics.handler(rc)
	return nil
}
