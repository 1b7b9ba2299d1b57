//go:build linux

package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// MaxBody is the largest message body a Conn sends or receives.
const MaxBody = 64 << 10

// MaxFiles is the most files one message carries.
const MaxFiles = 16

// headerBytes is the size of a message's header: its kind, its body's length and how many
// files come with it, each a little-endian uint32.
const headerBytes = 12

// Message is what a Conn sends: a kind the protocol above defines, a body, and open files
// whose descriptors travel with it (SCM_RIGHTS) and arrive as new descriptors of the same
// open files in the receiver, which owns and closes them.
type Message struct {
	Kind  uint32
	Body  []byte
	Files []*os.File
}

// Close closes the message's files.
func (m Message) Close() error {
	var errs []error
	for _, f := range m.Files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// Conn is one end of a connection between a driver and a rank process. One goroutine may
// send while another receives; two senders or two receivers must take turns.
type Conn struct {
	uc   *net.UnixConn
	peer Peer
	buf  []byte // a received packet: header and body
	oob  []byte // its control data
}

// Peer is who the kernel says is at the other end of a connection.
type Peer struct {
	Pid, Uid int
}

func newConn(uc *net.UnixConn, peer Peer) *Conn {
	return &Conn{uc: uc, peer: peer, buf: make([]byte, headerBytes+MaxBody+1),
		oob: make([]byte, unix.CmsgSpace(4*MaxFiles))}
}

// Dial connects to the socket at path, which Listen opened, and checks that the listener
// runs as this user.
func Dial(path string) (*Conn, error) {
	uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("ipc: dial %s: %w", path, err)
	}
	peer, err := peerOf(uc)
	if err == nil && peer.Uid != os.Getuid() {
		err = fmt.Errorf("listener pid %d runs as uid %d, this process as %d: %w", peer.Pid, peer.Uid, os.Getuid(), ErrPeerRejected)
	}
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("ipc: dial %s: %w", path, err)
	}
	return newConn(uc, peer), nil
}

// Peer returns the credentials of the process at the other end, as the kernel gave them
// when the connection was made.
func (c *Conn) Peer() Peer { return c.peer }

// Close closes the connection; the peer's next Recv returns io.EOF.
func (c *Conn) Close() error { return c.uc.Close() }

// Send sends m as one packet. Its files stay open: the receiver gets descriptors of its own.
func (c *Conn) Send(m Message) error {
	if len(m.Body) > MaxBody || len(m.Files) > MaxFiles {
		return fmt.Errorf("ipc: send kind %d: %d body bytes and %d files, at most %d and %d", m.Kind, len(m.Body), len(m.Files), MaxBody, MaxFiles)
	}
	pkt := make([]byte, headerBytes, headerBytes+len(m.Body))
	binary.LittleEndian.PutUint32(pkt[0:], m.Kind)
	binary.LittleEndian.PutUint32(pkt[4:], uint32(len(m.Body)))
	binary.LittleEndian.PutUint32(pkt[8:], uint32(len(m.Files)))
	pkt = append(pkt, m.Body...)
	var oob []byte
	if len(m.Files) > 0 {
		fds := make([]int, len(m.Files))
		for i, f := range m.Files {
			if f == nil {
				return fmt.Errorf("ipc: send kind %d: file %d is nil", m.Kind, i)
			}
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	n, _, err := c.uc.WriteMsgUnix(pkt, oob, nil)
	runtime.KeepAlive(m.Files) // their descriptors must stay open until the kernel took them
	if err != nil {
		return fmt.Errorf("ipc: send kind %d to pid %d: %w", m.Kind, c.peer.Pid, err)
	}
	if n != len(pkt) {
		return fmt.Errorf("ipc: send kind %d to pid %d: %d of %d bytes sent", m.Kind, c.peer.Pid, n, len(pkt))
	}
	return nil
}

// Recv receives the next message; it returns io.EOF once the peer closed the connection or
// exited. A message that arrives short or without the files its header announces is an
// error, and the files that did arrive are closed.
func (c *Conn) Recv() (Message, error) {
	n, oobn, flags, _, err := c.uc.ReadMsgUnix(c.buf, c.oob)
	if err != nil {
		return Message{}, fmt.Errorf("ipc: receive from pid %d: %w", c.peer.Pid, err)
	}
	files, ferr := parseFiles(c.oob[:oobn])
	m := Message{Files: files}
	if err := c.check(c.buf[:n], oobn, flags, ferr, len(files)); err != nil {
		_ = m.Close()
		return Message{}, err
	}
	m.Kind = binary.LittleEndian.Uint32(c.buf)
	m.Body = append([]byte(nil), c.buf[headerBytes:n]...)
	return m, nil
}

// check validates a received packet: whole, with a header whose body length and file count
// match what arrived.
func (c *Conn) check(pkt []byte, oobn, flags int, ferr error, files int) error {
	from := fmt.Sprintf("ipc: receive from pid %d", c.peer.Pid)
	switch {
	case len(pkt) == 0 && oobn == 0:
		return io.EOF
	case ferr != nil:
		return fmt.Errorf("%s: %w", from, ferr)
	case flags&unix.MSG_TRUNC != 0 || len(pkt) > headerBytes+MaxBody: // c.buf has a byte to spare, so one too many shows
		return fmt.Errorf("%s: message too long: more than %d bytes", from, headerBytes+MaxBody)
	case flags&unix.MSG_CTRUNC != 0:
		return fmt.Errorf("%s: file descriptors truncated: more than %d came with the message", from, MaxFiles)
	case len(pkt) < headerBytes:
		return fmt.Errorf("%s: truncated message: %d bytes, a header alone is %d", from, len(pkt), headerBytes)
	}
	kind, body, want := binary.LittleEndian.Uint32(pkt), binary.LittleEndian.Uint32(pkt[4:]), binary.LittleEndian.Uint32(pkt[8:])
	if got := len(pkt) - headerBytes; uint32(got) != body {
		return fmt.Errorf("%s: truncated message of kind %d: its header announces %d body bytes, %d arrived", from, kind, body, got)
	}
	if uint32(files) != want {
		return fmt.Errorf("%s: message of kind %d announces %d file descriptors, %d arrived", from, kind, want, files)
	}
	return nil
}

// parseFiles takes the descriptors out of a packet's control data. Whatever it finds it
// returns as files, even with an error, so that the caller closes them.
func parseFiles(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parsing control data: %w", err)
	}
	var files []*os.File
	for _, msg := range msgs {
		fds, err := unix.ParseUnixRights(&msg)
		if err != nil {
			return files, fmt.Errorf("parsing control data: %w", err)
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("fd %d received", fd)))
		}
	}
	return files, nil
}
