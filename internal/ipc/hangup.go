//go:build linux

package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Hangups watches connections for their peer hanging up (closing its end, exiting, or
// calling Shutdown) without reading from them, so that their messages stay for whoever
// receives them: a driver learns that a rank process is gone, a rank that its driver is,
// while a protocol above still owns the connection's reads.
type Hangups struct {
	onHangup func(i int)
	wake     int   // eventfd: a write ends the poller
	fds      []int // a duplicate of each connection's descriptor, polled for POLLRDHUP
	done     chan struct{}
	once     sync.Once
}

// WatchHangups starts a poller that calls onHangup(i) once for each conns[i] whose peer
// hung up, from the poller's goroutine; onHangup must not block for long. A Shutdown of
// this end counts as a hangup too.
func WatchHangups(conns []*Conn, onHangup func(i int)) (*Hangups, error) {
	if onHangup == nil {
		return nil, fmt.Errorf("ipc: watch hangups: no onHangup callback")
	}
	h := &Hangups{onHangup: onHangup, wake: -1, done: make(chan struct{})}
	for _, c := range conns {
		fd, err := c.dup()
		if err != nil {
			h.closeFDs()
			return nil, fmt.Errorf("ipc: watch hangups of pid %d: %w", c.peer.Pid, err)
		}
		h.fds = append(h.fds, fd)
	}
	var err error
	if h.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		h.closeFDs()
		return nil, fmt.Errorf("ipc: watch hangups: eventfd: %w", err)
	}
	go h.poll()
	return h, nil
}

// Close stops the poller and closes its descriptors. Close it before the connections are
// expected to reach their peers as closed: its duplicates keep the sockets open.
func (h *Hangups) Close() error {
	h.once.Do(func() {
		_, _ = unix.Write(h.wake, binary.NativeEndian.AppendUint64(nil, 1))
		<-h.done
		h.closeFDs()
	})
	return nil
}

func (h *Hangups) closeFDs() {
	for _, fd := range h.fds {
		_ = unix.Close(fd)
	}
	if h.wake >= 0 {
		_ = unix.Close(h.wake)
	}
}

// poll waits until every connection hung up or Close rings the eventfd. Only POLLRDHUP is
// asked for: messages waiting to be read do not wake it.
func (h *Hangups) poll() {
	defer close(h.done)
	fds := []unix.PollFd{{Fd: int32(h.wake), Events: unix.POLLIN}}
	for _, fd := range h.fds {
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLRDHUP})
	}
	for {
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			return // EFAULT or EINVAL: nothing a retry mends; the pidfds still report deaths
		}
		if fds[0].Revents != 0 {
			return
		}
		for i := 1; i < len(fds); i++ {
			if fds[i].Fd >= 0 && fds[i].Revents != 0 {
				fds[i].Fd = -1 // poll skips a negative descriptor: each hangup is told once
				h.onHangup(i - 1)
			}
		}
	}
}

// dup returns a new descriptor of the connection's socket, for a poller of its own.
func (c *Conn) dup() (int, error) {
	raw, err := c.uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("dup of the socket: %w", derr)
	}
	return fd, nil
}

// Shutdown hangs up the connection for both ends, whoever else holds its descriptor: the
// peer's next Recv returns io.EOF and its Hangups report it, and a Recv of this end that is
// waiting returns io.EOF at once. Close still releases the descriptor.
func (c *Conn) Shutdown() error {
	if err := errors.Join(c.uc.CloseRead(), c.uc.CloseWrite()); err != nil {
		return fmt.Errorf("ipc: shutdown of the connection to pid %d: %w", c.peer.Pid, err)
	}
	return nil
}
