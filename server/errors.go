package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

// The error types of OpenAI's API, as the "type" field of an error body carries them.
const (
	typeInvalidRequest = "invalid_request_error" // 400, 401, 404, 405, 413: the request is wrong
	typeRateLimit      = "rate_limit_error"      // 429: too many requests wait
	typeServer         = "server_error"          // 500, 503: the server or the engine failed
)

// apiError is an error as OpenAI's API returns it: an HTTP status and the body
// {"error": {"message", "type", "param", "code"}}, param and code null when empty.
type apiError struct {
	Status  int
	Message string
	Type    string
	Param   string // the request field that was wrong, "" for none
	Code    string // a machine-readable reason such as "model_not_found", "" for none
	// RetryAfter, when > 0, is sent as the Retry-After header (seconds): the request may
	// succeed if sent again then.
	RetryAfter int
}

func (e *apiError) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%d %s (param %s): %s", e.Status, e.Type, e.Param, e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message)
}

// errorBody is the JSON of an apiError.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	d := errorDetail{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		d.Param = &e.Param
	}
	if e.Code != "" {
		d.Code = &e.Code
	}
	return errorBody{Error: d}
}

// badRequest is a 400 naming the parameter that was wrong.
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// unsupported is a 400 for a parameter this server does not implement.
func unsupported(param, what string) *apiError {
	e := badRequest(param, "%s is not supported by this server", what)
	e.Code = "unsupported_parameter"
	return e
}

// modelNotFound is OpenAI's 404 for a model the server does not serve.
func modelNotFound(model, served string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("The model `%s` does not exist; this server serves `%s`.", model, served)}
}

// unavailable is a 503: the engine is not loaded, failed, or the server is shutting down.
func unavailable(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeServer, Code: code, Message: fmt.Sprintf(format, args...)}
}

// writeError sends e as the response, with its status.
func writeError(rc *fasthttp.RequestCtx, e *apiError) {
	rc.Response.ResetBody()
	rc.SetStatusCode(e.Status)
	if e.RetryAfter > 0 {
		rc.Response.Header.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(rc, e.body())
}

// writeJSON sends v as an application/json body, keeping the status already set.
func writeJSON(rc *fasthttp.RequestCtx, v any) {
	b, err := json.Marshal(v)
	if err != nil { // the wire types always marshal; this is a bug
		b = []byte(`{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":null}}`)
		rc.SetStatusCode(http.StatusInternalServerError)
	}
	rc.SetContentType("application/json")
	rc.SetBody(b)
}

// decodeError turns a JSON decoding error of a request body into a 400 naming the field.
func decodeError(err error) *apiError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return badRequest("", "the body is not valid JSON: %v (at byte %d)", err, syn.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return badRequest("", "the body must be a JSON object, got %s", typ.Value)
		}
		return badRequest(field, "%s must be %s, got %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	return badRequest("", "the body is not valid JSON: %v", err)
}

// jsonKind names a Go kind as the JSON type a client should have sent.
func jsonKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "bool":
		return "a boolean"
	case kind == "string":
		return "a string"
	case kind == "slice", kind == "array":
		return "an array"
	case kind == "struct", kind == "map":
		return "an object"
	}
	return "of type " + kind
}
