//go:build linux

package ipc

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// connPair returns the two ends of a connected SOCK_SEQPACKET socket pair, closed when the
// test ends.
func connPair(t *testing.T) (*Conn, *Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	var conns [2]*Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		nc, err := net.FileConn(f)
		require.NoError(t, f.Close())
		require.NoError(t, err)
		conns[i] = newConn(nc.(*net.UnixConn), Peer{Pid: os.Getpid(), Uid: os.Getuid()})
		t.Cleanup(func() { conns[i].Close() })
	}
	return conns[0], conns[1]
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

func TestMessageRoundTrip(t *testing.T) {
	a, b := connPair(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	require.NoError(t, a.Send(Message{Kind: 7, Body: []byte("handles"), Files: []*os.File{r}}))
	require.NoError(t, a.Send(Message{Kind: 8})) // the next message keeps its own bounds
	m, err := b.Recv()
	require.NoError(t, err)
	defer m.Close()
	require.EqualValues(t, 7, m.Kind)
	require.Equal(t, "handles", string(m.Body))
	require.Len(t, m.Files, 1)
	// The received descriptor is the same open pipe: what goes into w comes out of it.
	_, err = w.Write([]byte("x"))
	require.NoError(t, err)
	buf := make([]byte, 1)
	_, err = m.Files[0].Read(buf)
	require.NoError(t, err)
	require.Equal(t, "x", string(buf))

	m, err = b.Recv()
	require.NoError(t, err)
	require.EqualValues(t, 8, m.Kind)
	require.Empty(t, m.Body)
	require.Empty(t, m.Files)
}

func TestRecvEOF(t *testing.T) {
	a, b := connPair(t)
	require.NoError(t, a.Close())
	_, err := b.Recv()
	require.ErrorIs(t, err, io.EOF)
}

// header builds a packet's header as Send writes it.
func header(kind, body, files uint32) []byte {
	h := binary.LittleEndian.AppendUint32(nil, kind)
	h = binary.LittleEndian.AppendUint32(h, body)
	return binary.LittleEndian.AppendUint32(h, files)
}

// TestRecvRejectsMalformed sends packets that Send never writes and checks that Recv names
// what is wrong and closes the descriptors that came with them.
func TestRecvRejectsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pkt   []byte
		files int
		want  string
	}{
		{"short header", []byte{1, 2, 3, 4, 5}, 0, "truncated message: 5 bytes, a header alone is 12"},
		{"short body", append(header(3, 10, 0), 1, 2, 3), 0, "truncated message of kind 3: its header announces 10 body bytes, 3 arrived"},
		{"missing descriptor", header(4, 0, 1), 0, "message of kind 4 announces 1 file descriptors, 0 arrived"},
		{"unannounced descriptor", header(5, 0, 0), 1, "message of kind 5 announces 0 file descriptors, 1 arrived"},
		{"missing one of two", header(6, 0, 2), 1, "message of kind 6 announces 2 file descriptors, 1 arrived"},
		{"one byte too long", append(header(9, MaxBody+1, 0), make([]byte, MaxBody+1)...), 0, "message too long: more than 65548 bytes"},
		{"far too long", append(header(9, 2*MaxBody, 0), make([]byte, 2*MaxBody)...), 0, "message too long: more than 65548 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := connPair(t)
			var oob []byte
			if tc.files > 0 {
				f, err := os.Open(os.DevNull)
				require.NoError(t, err)
				defer f.Close()
				fds := make([]int, tc.files)
				for i := range fds {
					fds[i] = int(f.Fd())
				}
				oob = unix.UnixRights(fds...)
			}
			_, _, err := a.uc.WriteMsgUnix(tc.pkt, oob, nil)
			require.NoError(t, err)
			before := openFDs(t)
			_, err = b.Recv()
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, before, openFDs(t), "descriptors that came with a bad message are closed")
		})
	}
}

func TestSendRefusesWhatCannotGo(t *testing.T) {
	a, _ := connPair(t)
	require.ErrorContains(t, a.Send(Message{Kind: 1, Body: make([]byte, MaxBody+1)}), "at most 65536")
	require.ErrorContains(t, a.Send(Message{Kind: 1, Files: make([]*os.File, MaxFiles+1)}), "17 files")
	require.ErrorContains(t, a.Send(Message{Kind: 2, Files: []*os.File{nil}}), "file 0 is nil")
}
