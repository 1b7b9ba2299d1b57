//go:build linux

package ipc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/internal/testutil"
)

func listen(t *testing.T, allow func(int) bool) *Listener {
	t.Helper()
	l, err := Listen(allow)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func TestListenPrivateDirectory(t *testing.T) {
	l, err := Listen(func(int) bool { return true })
	require.NoError(t, err)
	dir := filepath.Dir(l.Path())
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.ModeDir|0o700, st.Mode(), "only this user may reach the socket")
	require.NoError(t, l.Close())
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "Close leaves nothing behind")
}

func TestListenNeedsARule(t *testing.T) {
	_, err := Listen(nil)
	require.ErrorContains(t, err, "no rule")
}

func TestAcceptAllowedPeer(t *testing.T) {
	l := listen(t, func(pid int) bool { return pid == os.Getpid() })
	dialed := make(chan *Conn, 1)
	go func() {
		c, err := Dial(l.Path())
		if err != nil {
			t.Error(err)
		}
		dialed <- c
	}()
	srv, err := l.Accept()
	require.NoError(t, err)
	defer srv.Close()
	cli := <-dialed
	require.NotNil(t, cli)
	defer cli.Close()
	require.Equal(t, Peer{Pid: os.Getpid(), Uid: os.Getuid()}, srv.Peer())
	require.Equal(t, Peer{Pid: os.Getpid(), Uid: os.Getuid()}, cli.Peer())
	require.NoError(t, cli.Send(Message{Kind: 1, Body: []byte("hi")}))
	m, err := srv.Recv()
	require.NoError(t, err)
	require.Equal(t, "hi", string(m.Body))
}

func TestCheckPeer(t *testing.T) {
	all := func(int) bool { return true }
	require.NoError(t, checkPeer(Peer{Pid: 10, Uid: 1000}, 1000, all))
	err := checkPeer(Peer{Pid: 10, Uid: 0}, 1000, all)
	require.ErrorIs(t, err, ErrPeerRejected)
	require.ErrorContains(t, err, "peer pid 10 runs as uid 0, not 1000")
	err = checkPeer(Peer{Pid: 11, Uid: 1000}, 1000, func(pid int) bool { return pid == 10 })
	require.ErrorIs(t, err, ErrPeerRejected)
	require.ErrorContains(t, err, "peer pid 11 (uid 1000) is not a process this one started")
}

// TestAcceptRejectsProcessNotStarted has a real process that Children did not start dial the
// listener: Accept turns it away, naming its pid, and the process sees the connection close.
func TestAcceptRejectsProcessNotStarted(t *testing.T) {
	kids := newChildren(t, func(*Exit) {})
	l := listen(t, kids.Has)
	stranger := testutil.ChildCommand("dial", socketVar+"="+l.Path())
	require.NoError(t, stranger.Start())
	_, err := l.Accept()
	require.ErrorIs(t, err, ErrPeerRejected)
	require.ErrorContains(t, err, "is not a process this one started")
	require.ErrorContains(t, err, "peer pid "+itoa(stranger.Process.Pid))
	require.NoError(t, stranger.Wait(), "the stranger saw its connection closed")
}
