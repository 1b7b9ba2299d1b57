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
// i is a choice's index.
type streamer interface {
	// head returns the events sent before choice i's first token (chat's role chunk, the
	// prompt of an echoing completion).
	head(i int) []any
	// token returns the event carrying choice i's text and the logprobs of the tokens
	// that completed it (none unless asked for).
	token(i int, text string, lps []engine.TokenLogprobs) any
	// finish returns choice i's last event, carrying the finish reason and the logprobs
	// of tokens whose text never came (a stop string held it back).
	finish(i int, reason string, lps []engine.TokenLogprobs) any
	// usage returns the event with the usage and no choices.
	usage(u *usage) any
	// whole returns the response of a request that did not ask to stream.
	whole(res []engine.Result, u *usage) any
}

// stream answers with Server-Sent Events: enc's head of every choice, one event per token
// that completes text, each choice's finish event as it ends (the choices' events
// interleave, each naming its index), the usage event when the client asked for it, and
// "data: [DONE]". A generation that fails ends with an error event and "data: [DONE]"; a client
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
				j.finish(nil)
				s.metrics.request(endpoint, http.StatusInternalServerError)
			}
		}()
		for i := range j.reqs {
			for _, v := range enc.head(i) {
				_ = ev.event(v)
			}
		}
		pending := make([][]engine.TokenLogprobs, len(j.reqs)) // choice i's, touched by its goroutine only
		res, err := j.run(func(i int, t engine.Token) error {
			if t.Logprobs != nil {
				pending[i] = append(pending[i], *t.Logprobs)
			}
			if t.Text == "" { // held back by the engine: nothing to send yet
				return ev.gone()
			}
			lps := pending[i]
			pending[i] = nil
			return ev.event(enc.token(i, t.Text, lps))
		}, func(i int, res engine.Result) { _ = ev.event(enc.finish(i, res.FinishReason, pending[i])) })
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
			if includeUsage {
				_ = ev.event(enc.usage(j.usage(res)))
			}
			_ = ev.doneEvent()
		}
		ev.close()
		s.metrics.request(endpoint, status)
	})
}
