package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// sse writes one Server-Sent Events stream: "data: <json>\n\n" events, flushed one by
// one, and ": ping" comments when the stream has been silent for a ping interval (a long
// prefill). A failed write or flush means the client is gone: the error sticks, and
// onGone (which cancels the generation, freeing its KV blocks) runs once. Safe for the
// emitting goroutine and the pinger together.
type sse struct {
	mu     sync.Mutex
	w      *bufio.Writer
	err    error
	last   time.Time
	onGone func()

	stop chan struct{}
	done chan struct{}
}

// newSSE starts a stream on w, pinging every interval of silence (none if interval ≤ 0).
func newSSE(w *bufio.Writer, interval time.Duration, onGone func()) *sse {
	s := &sse{w: w, last: time.Now(), onGone: onGone, stop: make(chan struct{}), done: make(chan struct{})}
	if interval <= 0 {
		close(s.done)
		return s
	}
	go s.ping(interval)
	return s
}

func (s *sse) ping(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			silent := time.Since(s.last) >= interval
			s.mu.Unlock()
			if silent && s.write([]byte(": ping\n\n")) != nil {
				return
			}
		}
	}
}

// event sends v as one data event.
func (s *sse) event(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("server: encoding an event: %w", err)
	}
	return s.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

// doneEvent sends OpenAI's end of stream, "data: [DONE]".
func (s *sse) doneEvent() error { return s.write([]byte("data: [DONE]\n\n")) }

// gone returns the write error that ended the stream, nil while the client listens.
func (s *sse) gone() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *sse) write(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	_, err := s.w.Write(b)
	if err == nil {
		err = s.w.Flush()
	}
	s.last = time.Now()
	if err != nil {
		s.err = fmt.Errorf("server: the client left the stream: %w", err)
		s.onGone()
	}
	return s.err
}

// close stops the pinger; the stream's writer must not be used after it returns.
func (s *sse) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}
