//go:build linux

package ipc

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hangups watches conns and sends each hangup's index to the channel it returns.
func hangups(t *testing.T, conns ...*Conn) chan int {
	t.Helper()
	ch := make(chan int, len(conns))
	h, err := WatchHangups(conns, func(i int) { ch <- i })
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	return ch
}

func nextHangup(t *testing.T, ch chan int) int {
	t.Helper()
	select {
	case i := <-ch:
		return i
	case <-time.After(exitLimit):
		t.Fatal("no hangup reported")
		return -1
	}
}

// TestHangupsReportClose: a message waiting to be read wakes no one, the peer's Close is
// reported once, for its connection, and the message is still there for Recv.
func TestHangupsReportClose(t *testing.T) {
	a0, b0 := connPair(t)
	a1, b1 := connPair(t)
	ch := hangups(t, b0, b1)
	require.NoError(t, a1.Send(Message{Kind: 3, Body: []byte("last words")}))
	require.NoError(t, a1.Close())
	require.Equal(t, 1, nextHangup(t, ch))
	m, err := b1.Recv()
	require.NoError(t, err, "the watcher reads nothing")
	require.Equal(t, "last words", string(m.Body))
	_, err = b1.Recv()
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, a0.Send(Message{Kind: 4}))
	require.Empty(t, ch, "a message is not a hangup; a hangup is told once")
}

// TestShutdownEndsAWaitingRecv: Shutdown reaches the peer although the watcher holds a
// duplicate of this end's socket, and a Recv waiting on this end returns io.EOF.
func TestShutdownEndsAWaitingRecv(t *testing.T) {
	a, b := connPair(t)
	hangups(t, a) // a duplicate of a's socket: a Close of a alone would not reach b
	ch := hangups(t, b)
	recv := make(chan error, 1)
	go func() {
		_, err := a.Recv()
		recv <- err
	}()
	require.NoError(t, a.Shutdown())
	require.Equal(t, 0, nextHangup(t, ch))
	select {
	case err := <-recv:
		require.ErrorIs(t, err, io.EOF)
	case <-time.After(exitLimit):
		t.Fatal("Recv still waits after Shutdown")
	}
	_, err := WatchHangups(nil, nil)
	require.ErrorContains(t, err, "no onHangup")
}
