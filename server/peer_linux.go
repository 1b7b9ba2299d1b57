package server

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed returns a check of whether conn's peer has closed or reset the connection,
// nil when conn is not a socket. The check peeks at the socket without consuming or
// waiting (recv with MSG_PEEK|MSG_DONTWAIT): 0 bytes is the peer's FIN, EAGAIN a peer
// still there with nothing sent, bytes a pipelined request (alive), any other error (a
// reset) a peer gone. A client that half-closes its side after sending the request reads
// as gone, as net/http takes it too.
func peerClosed(conn net.Conn) func() bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var buf [1]byte
	return func() bool {
		gone := false
		if err := raw.Control(func(fd uintptr) {
			for {
				n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
				switch {
				case errors.Is(err, syscall.EINTR):
					continue
				case errors.Is(err, syscall.EAGAIN):
				case err != nil:
					gone = true
				default:
					gone = n == 0
				}
				return
			}
		}); err != nil {
			gone = true // the connection is closed already
		}
		return gone
	}
}
