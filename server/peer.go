package server

import (
	"net"
	"time"
)

// peerPollInterval is how often a non-streaming request's connection is checked for a
// client that left.
const peerPollInterval = 200 * time.Millisecond

// watchPeer checks conn every interval while a non-streaming request waits for the engine,
// and calls cancel once the client has closed the connection or reset it, so that the
// engine retires the sequence and frees its KV blocks (fasthttp does not tell a handler that
// its client left; net/http's background read cancels the request's context the same
// way). stop ends the watch, waiting for a check in progress, and reports whether the
// client left. Where the connection cannot be checked (a platform without peerClosed, a
// connection that is not a socket), stop is all that happens.
func watchPeer(conn net.Conn, interval time.Duration, cancel func()) (stop func() (left bool)) {
	closed := peerClosed(conn)
	if closed == nil {
		return func() bool { return false }
	}
	quit, done := make(chan struct{}), make(chan bool, 1)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				done <- false
				return
			case <-t.C:
				if closed() {
					cancel()
					done <- true
					return
				}
			}
		}
	}()
	return func() bool {
		close(quit)
		return <-done
	}
}
