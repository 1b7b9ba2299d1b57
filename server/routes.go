package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// route is one endpoint: a path (every path under it when it ends in "/"), its method and
// its handler.
type route struct {
	path   string
	method string
	v1     bool // the API: needs the engine and, when configured, the API key
	handle func(s *Server, rc *fasthttp.RequestCtx, l *loaded, arrived time.Time) *apiError
}

// routeTable is every endpoint, in the order they are matched.
func routeTable() []route {
	return []route{
		{"/v1/completions", http.MethodPost, true, (*Server).completions},
		{"/v1/chat/completions", http.MethodPost, true, (*Server).chatCompletions},
		{"/v1/models", http.MethodGet, true, (*Server).models},
		{"/v1/models/", http.MethodGet, true, (*Server).model},   // OpenAI's retrieve model
		{"/tokenize", http.MethodPost, true, (*Server).tokenize}, // vLLM's, outside /v1/
		{"/detokenize", http.MethodPost, true, (*Server).detokenize},
		{"/health", http.MethodGet, false, (*Server).health},
		{"/metrics", http.MethodGet, false, (*Server).serveMetrics},
		{"/debug/flight", http.MethodGet, true, (*Server).flight},
	}
}

func routes(path string) (route, bool) {
	for _, r := range routeTable() {
		if r.path == path || strings.HasSuffix(r.path, "/") && strings.HasPrefix(path, r.path) {
			return r, true
		}
	}
	return route{}, false
}

// KeyedRoutes says which routes Config.APIKey guards, for help texts: "/v1/" for the API
// under it, then the others by path.
func KeyedRoutes() string {
	var paths []string
	for _, r := range routeTable() {
		switch {
		case !r.v1:
		case strings.HasPrefix(r.path, "/v1/"):
			if !slices.Contains(paths, "/v1/") {
				paths = append(paths, "/v1/")
			}
		default:
			paths = append(paths, r.path)
		}
	}
	last := len(paths) - 1
	return strings.Join(paths[:last], ", ") + " and " + paths[last]
}

// handle routes one request, checks the method and the API key, and counts the request
// by endpoint and status (a stream counts itself when it ends).
func (s *Server) handle(rc *fasthttp.RequestCtx) {
	arrived := time.Now()
	path := string(rc.Path())
	r, ok := routes(path)
	endpoint := r.path // the route, not the path: /v1/models/{id} must not add a label value an id
	if !ok {
		endpoint = "other"
	}
	defer func() { // fasthttp does not recover: a bug in one request must not end the server
		if p := recover(); p != nil {
			s.log.Printf("panic serving %s %s: %v\n%s", rc.Method(), path, p, debug.Stack())
			writeError(rc, &apiError{Status: http.StatusInternalServerError, Type: typeServer, Code: "internal_error",
				Message: fmt.Sprintf("internal error: %v", p)})
			s.metrics.request(endpoint, http.StatusInternalServerError)
		}
	}()
	err := s.dispatch(rc, r, ok, arrived)
	if err != nil {
		writeError(rc, err)
	}
	if !rc.Response.IsBodyStream() {
		s.metrics.request(endpoint, rc.Response.StatusCode())
	}
}

func (s *Server) dispatch(rc *fasthttp.RequestCtx, r route, found bool, arrived time.Time) *apiError {
	if c, ok := rc.Conn().(*servedConn); ok && c.overLimit { // one request: /health only
		rc.SetConnectionClose()
		if string(rc.Path()) != "/health" {
			return tooManyConnections(s.cfg.MaxConnections)
		}
	}
	method := string(rc.Method())
	switch {
	case !found:
		return &apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "unknown_url",
			Message: fmt.Sprintf("Unknown request URL: %s %s.", method, rc.Path())}
	case method != r.method && !(r.method == http.MethodGet && method == http.MethodHead):
		rc.Response.Header.Set("Allow", r.method)
		return &apiError{Status: http.StatusMethodNotAllowed, Type: typeInvalidRequest, Code: "method_not_allowed",
			Message: fmt.Sprintf("%s %s is not allowed; use %s.", method, rc.Path(), r.method)}
	case method == http.MethodPost && !isJSON(rc.Request.Header.ContentType()):
		return &apiError{Status: http.StatusUnsupportedMediaType, Type: typeInvalidRequest, Code: "unsupported_media_type",
			Message: fmt.Sprintf("the body must be JSON (Content-Type: application/json), got Content-Type %q", clip(rc.Request.Header.ContentType()))}
	}
	var l *loaded
	if r.v1 {
		if err := s.authorize(rc); err != nil {
			return err
		}
		if l = s.eng.Load(); l == nil {
			return unavailable("model_loading", "the model is still loading")
		}
	}
	return r.handle(s, rc, l, arrived)
}

// authorize checks the bearer token when an API key is configured.
func (s *Server) authorize(rc *fasthttp.RequestCtx) *apiError {
	if s.cfg.APIKey == "" {
		return nil
	}
	fail := func(msg string) *apiError {
		rc.Response.Header.Set("WWW-Authenticate", `Bearer realm="tpslice"`)
		return &apiError{Status: http.StatusUnauthorized, Type: typeInvalidRequest, Code: "invalid_api_key", Message: msg}
	}
	auth := string(rc.Request.Header.Peek("Authorization"))
	key, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || key == "" {
		return fail("You didn't provide an API key. Provide it in an Authorization header using Bearer auth (Authorization: Bearer YOUR_KEY).")
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.cfg.APIKey)) != 1 {
		return fail("Incorrect API key provided.")
	}
	return nil
}

// handleTransportError answers requests fasthttp could not read (a body over the limit,
// a malformed request line) with an OpenAI error body.
func (s *Server) handleTransportError(rc *fasthttp.RequestCtx, err error) {
	// The answer says what went wrong, never fasthttp's text (which quotes the bytes read).
	e := badRequest("", "the HTTP request is malformed")
	var netErr net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		e = &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalidRequest, Code: "request_too_large",
			Message: fmt.Sprintf("the request body is larger than the limit of %d bytes", s.cfg.MaxBodyBytes)}
	case errors.As(err, &netErr) && netErr.Timeout():
		e = &apiError{Status: http.StatusRequestTimeout, Type: typeInvalidRequest, Code: "request_timeout",
			Message: "the request did not arrive in time"}
		rc.SetConnectionClose()
	}
	s.log.Printf("request from %v could not be read: %v", rc.RemoteAddr(), err)
	writeError(rc, e)
	endpoint := string(rc.Path())
	if _, ok := routes(endpoint); !ok {
		endpoint = "other"
	}
	s.metrics.request(endpoint, e.Status)
}

// isJSON reports whether a Content-Type is JSON's (application/json, any parameters such
// as charset); an absent one is taken as JSON, as OpenAI's clients do not always send it.
func isJSON(ct []byte) bool {
	if len(ct) == 0 {
		return true
	}
	media, _, _ := strings.Cut(string(ct), ";")
	return strings.EqualFold(strings.TrimSpace(media), "application/json")
}
