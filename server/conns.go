package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// healthReserve is how many connections past MaxConnections are still read, one request
// each: /health is answered on them (a load balancer's probe must not read a full server
// as a dead one) and any other route gets the API's JSON 503. Past those, connLimiter
// answers every route that 503 itself (refuse). fasthttp's own bound would answer in
// plain text on every route, /health included; connLimiter keeps it from being reached.
const healthReserve = 16

// A connection past the reserve is refused on a goroutine of its own, at most maxRefusing
// at once (past that the server is flooded, and a connection is closed unanswered), each
// within refuseTimeout: it reads the request's head, writes the 503, and reads what else
// the client sends until it closes.
const (
	maxRefusing    = 64
	refuseTimeout  = time.Second
	maxRequestHead = 8 << 10
)

// connLimiter is a listener the server serves: it counts the connections open (in the
// server's count, over all its listeners), marks those past MaxConnections as over the
// limit (servedConn.overLimit), answers those past the reserve with the JSON 503 itself,
// and gives every connection its write deadline.
type connLimiter struct {
	net.Listener
	max, reserve int
	writeTimeout time.Duration
	open         *atomic.Int64
	refusal      []byte        // the whole HTTP response to a connection past the reserve
	refusing     chan struct{} // a slot per refusal in progress
}

func (s *Server) newConnLimiter(ln net.Listener) *connLimiter {
	return &connLimiter{Listener: ln, max: s.cfg.MaxConnections, reserve: healthReserve, writeTimeout: s.cfg.WriteTimeout,
		open: &s.conns, refusal: refusalResponse(tooManyConnections(s.cfg.MaxConnections)), refusing: make(chan struct{}, maxRefusing)}
}

// Accept returns the next connection to serve; connections past the reserve are refused
// here.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := l.open.Add(1)
		conn := &servedConn{Conn: c, limiter: l, overLimit: n > int64(l.max)}
		if n <= int64(l.max+l.reserve) {
			return conn, nil
		}
		l.refuse(conn)
	}
}

// refuse answers c with the 503 and closes it, on a goroutine of its own. It reads the
// request's head first, since a client that gets an answer before it sent its request may
// take it for a broken connection (Go's does), and reads on after its answer until the
// client closes, since closing with unread bytes would reset the connection under the
// answer.
func (l *connLimiter) refuse(c *servedConn) {
	select {
	case l.refusing <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		raw := c.Conn // not c's Write, which would set its own deadline
		_ = raw.SetDeadline(time.Now().Add(refuseTimeout))
		head := make([]byte, 0, maxRequestHead)
		for !bytes.Contains(head, []byte("\r\n\r\n")) && len(head) < cap(head) {
			n, err := raw.Read(head[len(head):cap(head)])
			head = head[:len(head)+n]
			if err != nil {
				return
			}
		}
		if _, err := raw.Write(l.refusal); err != nil {
			return
		}
		if hc, ok := raw.(interface{ CloseWrite() error }); ok {
			_ = hc.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, raw)
	}()
}

// tooManyConnections is the 503 of a connection past MaxConnections.
func tooManyConnections(max int) *apiError {
	e := unavailable("too_many_connections", "the server is serving its limit of %d connections (--max-connections); retry later", max)
	e.RetryAfter = 1
	return e
}

// refusalResponse is e as a whole HTTP/1.1 response that closes the connection.
func refusalResponse(e *apiError) []byte {
	body, _ := json.Marshal(e.body()) // an errorBody always marshals
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nServer: tpslice\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"Retry-After: %d\r\nConnection: close\r\n\r\n%s", e.Status, http.StatusText(e.Status), len(body), e.RetryAfter, body)
}

// servedConn is one accepted connection. Every Write must make progress within the
// limiter's write timeout (a client that stops reading, its stream included, has the
// connection closed under it: a stream's next event then fails, which cancels its
// generation as a disconnect does); Close gives its place back to the limiter.
type servedConn struct {
	net.Conn
	limiter   *connLimiter
	overLimit bool // accepted past MaxConnections: one request, /health only
	closeOnce sync.Once
}

func (c *servedConn) Write(b []byte) (int, error) {
	if d := c.limiter.writeTimeout; d > 0 {
		if err := c.Conn.SetWriteDeadline(time.Now().Add(d)); err != nil {
			return 0, err
		}
	}
	return c.Conn.Write(b)
}

func (c *servedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { c.limiter.open.Add(-1) })
	return err
}

// SyscallConn gives the socket under the connection, for watchPeer's check.
func (c *servedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("server: the connection is not a socket")
	}
	return sc.SyscallConn()
}
