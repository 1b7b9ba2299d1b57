package server

import (
	"bufio"
	"net/http"
	"runtime/debug"

	"github.com/valyala/fasthttp"

	"github.com/tpslice/tpslice/engine"
)

// statusClientClosed counts requests whose client left before the response ended (nginx's
// 499), in the requests metric only: the client never sees it.
const statusClientClosed = 499

// streamer makes one endpoint's responses: the events of its stream, or the whole answer.
type streamer interface {
	// head returns the events sent before the first token (chat's role chunk).
	head() []any
	// token returns the event carrying text.
	token(text string) any
	// finish returns the last event with a choice, carrying the finish reason.
	finish(reason string) any
	// usage returns the event with the usage and no choices.
	usage(u *usage) any
	// whole returns the response of a request that did not ask to stream.
	whole(res engine.Result) any
}

// stream answers with Server-Sent Events: enc's head, one event per token that completes
// text, the finish event, the usage event when the client asked for it, and "data:
// [DONE]". A generation that fails ends with an error event and "data: [DONE]"; a client
// that leaves cancels the generation. The stream writer runs after the handler returned
// and counts the request itself.
func (s *Server) stream(rc *fasthttp.RequestCtx, j *job, endpoint string, enc streamer, includeUsage bool) {
	rc.SetStatusCode(http.StatusOK)
	rc.SetContentType("text/event-stream; charset=utf-8")
	rc.Response.Header.Set("Cache-Control", "no-cache")
	rc.Response.Header.Set("X-Accel-Buffering", "no") // tell proxies not to buffer the stream
	ping := s.cfg.PingInterval
	rc.SetBodyStreamWriter(func(w *bufio.Writer) {
		ev := newSSE(w, ping, j.cancel)
		defer func() { // the writer runs on a goroutine of its own, which fasthttp does not guard
			if p := recover(); p != nil {
				s.log.Printf("panic streaming %s: %v\n%s", endpoint, p, debug.Stack())
				ev.close()
				j.finish(engine.Result{})
				s.metrics.request(endpoint, http.StatusInternalServerError)
			}
		}()
		for _, v := range enc.head() {
			_ = ev.event(v)
		}
		res, err := j.run(func(t engine.Token) error {
			if t.Text == "" { // held back by the engine: nothing to send yet
				return ev.gone()
			}
			return ev.event(enc.token(t.Text))
		})
		status := http.StatusOK
		switch {
		case ev.gone() != nil:
			status = statusClientClosed
		case err != nil:
			e := j.failure(err)
			status = e.Status
			_ = ev.event(e.body())
			_ = ev.doneEvent()
		default:
			_ = ev.event(enc.finish(res.FinishReason))
			if includeUsage {
				_ = ev.event(enc.usage(newUsage(len(res.PromptIDs), len(res.OutputIDs))))
			}
			_ = ev.doneEvent()
		}
		ev.close()
		s.metrics.request(endpoint, status)
	})
}
