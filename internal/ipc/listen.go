//go:build linux

package ipc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrPeerRejected is wrapped by the error of a connection whose peer's credentials are not
// the ones allowed.
var ErrPeerRejected = errors.New("peer rejected")

// Listener accepts connections from the processes it allows, on a socket in a directory of
// its own.
type Listener struct {
	dir   string
	ul    *net.UnixListener
	allow func(pid int) bool
}

// Listen opens a socket in a new directory that only this user can enter (mode 0700), so no
// other user's process can even connect. Accept admits a peer that runs as this user and
// whose pid allow accepts: typically Children.Has, the processes this one started. Close it
// once the children have connected: the directory goes and the connections stay, so nothing
// is left in the file system however this process ends later.
func Listen(allow func(pid int) bool) (*Listener, error) {
	if allow == nil {
		return nil, fmt.Errorf("ipc: listen: no rule for which peers to allow")
	}
	dir, err := os.MkdirTemp("", "tpslice-ipc-")
	if err != nil {
		return nil, fmt.Errorf("ipc: listen: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // MkdirTemp makes it 0700 today; the socket has no other guard
		os.RemoveAll(dir)
		return nil, fmt.Errorf("ipc: listen: %w", err)
	}
	path := filepath.Join(dir, "sock")
	ul, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("ipc: listen: %w", err)
	}
	return &Listener{dir: dir, ul: ul, allow: allow}, nil
}

// Path returns the socket's path, what Dial takes.
func (l *Listener) Path() string { return filepath.Join(l.dir, "sock") }

// Accept waits for the next connection and checks its peer's credentials; a rejected peer
// is disconnected and its error, naming its pid and uid, wraps ErrPeerRejected.
func (l *Listener) Accept() (*Conn, error) {
	uc, err := l.ul.AcceptUnix()
	if err != nil {
		return nil, fmt.Errorf("ipc: accept: %w", err)
	}
	peer, err := peerOf(uc)
	if err == nil {
		err = checkPeer(peer, os.Getuid(), l.allow)
	}
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("ipc: accept: %w", err)
	}
	return newConn(uc, peer), nil
}

// Close stops listening and removes the socket's directory; accepted connections stay open.
func (l *Listener) Close() error {
	return errors.Join(l.ul.Close(), os.RemoveAll(l.dir))
}

// checkPeer admits a peer that runs as uid and whose pid allow accepts.
func checkPeer(p Peer, uid int, allow func(pid int) bool) error {
	switch {
	case p.Uid != uid:
		return fmt.Errorf("peer pid %d runs as uid %d, not %d: %w", p.Pid, p.Uid, uid, ErrPeerRejected)
	case !allow(p.Pid):
		return fmt.Errorf("peer pid %d (uid %d) is not a process this one started: %w", p.Pid, p.Uid, ErrPeerRejected)
	}
	return nil
}

// peerOf asks the kernel who is at the other end of uc (SO_PEERCRED): the credentials the
// peer had when it connected or listened, which it cannot forge.
func peerOf(uc *net.UnixConn) (Peer, error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if cerr != nil {
		return Peer{}, fmt.Errorf("reading the peer's credentials (SO_PEERCRED): %w", cerr)
	}
	return Peer{Pid: int(cred.Pid), Uid: int(cred.Uid)}, nil
}
