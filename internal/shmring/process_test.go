//go:build linux

package shmring_test

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/shmring"
	"github.com/tpslice/tpslice/internal/testutil"
)

// The tests here run the readers as real processes: the test binary started again in a
// child's role (TestMain), which dials the driver's socket, maps the ring from the handle it
// receives and answers every message until an empty one.
const (
	socketVar = "TPSLICE_TEST_SOCKET" // where a child dials
	readerVar = "TPSLICE_TEST_READER" // which reader a child is
	memfdName = "memfd:tpslice-device"
	replySize = 64 // a batch of 16 sampled ids as int32
	kindStop  = 1  // the socket baseline's last message
)

// testRing is the ring of the process tests: small slots, so that the messages split and
// wrap. Readers is set per test.
var testRing = shmring.Config{Slots: 8, SlotBytes: 512, ReplyBytes: replySize, MaxMessage: 1 << 20}

// TestMain lets the test binary play a reader (testutil.ChildCommand).
func TestMain(m *testing.M) {
	if role := testutil.ChildRole(); role != "" {
		if err := runChild(role); err != nil {
			fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// answer is a reader's reply to msg: its checksum, padded to a batch's sampled ids.
func answer(msg []byte) []byte { return append(checksum(msg), make([]byte, replySize-8)...) }

func runChild(role string) error {
	conn, err := ipc.Dial(os.Getenv(socketVar))
	if err != nil {
		return err
	}
	defer conn.Close()
	if role == "socket" { // the baseline: every step a message on the socket
		for {
			m, err := conn.Recv()
			if err != nil || m.Kind == kindStop {
				return err
			}
			if err := conn.Send(ipc.Message{Body: answer(m.Body)}); err != nil {
				return err
			}
		}
	}
	index, err := strconv.Atoi(os.Getenv(readerVar))
	if err != nil {
		return err
	}
	n, err := device.NewNode(device.NodeConfig{Devices: index + 2, SMs: 1})
	if err != nil {
		return err
	}
	defer n.Close()
	d, _ := n.Device(index + 1)
	h, err := ipc.RecvHandle(conn)
	if err != nil {
		return err
	}
	b, err := d.OpenPeer(h)
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := echo(b.Uint64s(), index); err != nil {
		return err
	}
	if err := b.Free(); err != nil {
		return err
	}
	if left, err := testutil.MemfdLeft(memfdName); err != nil || len(left) > 0 {
		return fmt.Errorf("after Free: %v left (%v)", left, err)
	}
	return nil
}

// echo answers every message of the ring in words until an empty one.
func echo(words []uint64, index int) error {
	r, err := shmring.NewReader(words, index, shmring.Waits{Timeout: waitLimit})
	if err != nil {
		return err
	}
	var msg []byte
	for {
		if msg, err = r.Recv(msg); err != nil || len(msg) == 0 {
			return err
		}
		if err := r.Reply(answer(msg)); err != nil {
			return err
		}
	}
}

// driver is the test's side: the readers it started, the ring, and what it heard of their
// exits.
type driver struct {
	kids  *ipc.Children
	ln    *ipc.Listener
	buf   *device.Buffer
	ring  atomic.Pointer[shmring.Writer]
	died  atomic.Pointer[ipc.Exit]
	exits chan *ipc.Exit
	pids  []int
	conns []*ipc.Conn
}

// newDriver starts cfg.Readers children in role; for the ring's role ("echo") it formats a
// ring of cfg in a shareable buffer and sends each reader its handle.
func newDriver(t testing.TB, role string, cfg shmring.Config) *driver {
	t.Helper()
	return newLaggedDriver(t, role, cfg, 0)
}

// newLaggedDriver is newDriver whose writer gathers with Waits.Lag lag.
func newLaggedDriver(t testing.TB, role string, cfg shmring.Config, lag time.Duration) *driver {
	t.Helper()
	readers := cfg.Readers
	d := &driver{exits: make(chan *ipc.Exit, readers)}
	kids, err := ipc.NewChildren(func(e *ipc.Exit) {
		d.died.CompareAndSwap(nil, e)
		if w := d.ring.Load(); w != nil {
			w.Wake() // the writer may sleep waiting for the dead reader
		}
		d.exits <- e
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, kids.Close()) })
	ln, err := ipc.Listen(kids.Has)
	require.NoError(t, err)
	d.kids, d.ln = kids, ln
	for i := range readers {
		pid, err := kids.Start(fmt.Sprintf("reader %d", i), testutil.ChildCommand(role,
			socketVar+"="+ln.Path(), readerVar+"="+strconv.Itoa(i)))
		require.NoError(t, err)
		conn, err := ln.Accept()
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		d.pids, d.conns = append(d.pids, pid), append(d.conns, conn)
	}
	require.NoError(t, ln.Close()) // everyone connected: nothing is left in the file system
	if role == "socket" {
		return d
	}
	node, err := device.NewNode(device.NodeConfig{Devices: 1, SMs: 1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, node.Close()) })
	dev, err := node.Device(0)
	require.NoError(t, err)
	d.buf, err = dev.AllocShareable(dtype.F32, 2*cfg.Words())
	require.NoError(t, err)
	w, err := shmring.NewWriter(d.buf.Uint64s(), cfg, shmring.Waits{Timeout: waitLimit, Abort: d.abort, Lag: lag})
	require.NoError(t, err)
	d.ring.Store(w)
	h, err := d.buf.ExportShareable()
	require.NoError(t, err)
	for _, conn := range d.conns {
		require.NoError(t, ipc.SendHandle(conn, h))
	}
	require.NoError(t, h.Close())
	return d
}

// abort is the writer's abort: the first reader that died.
func (d *driver) abort() error {
	if e := d.died.Load(); e != nil {
		return e
	}
	return nil
}

// roundTrip broadcasts msg and checks every reader's answer.
func (d *driver) roundTrip(t testing.TB, msg []byte, replies [][]byte) ([][]byte, error) {
	w := d.ring.Load()
	if err := w.Send(msg); err != nil {
		return nil, err
	}
	replies, err := w.Gather(replies)
	if err != nil {
		return nil, err
	}
	for i, got := range replies {
		if string(got) != string(answer(msg)) {
			t.Fatalf("reader %d answered %x to a message whose answer is %x", i, got, answer(msg))
		}
	}
	return replies, nil
}

// exit returns the next exit the poller reported.
func (d *driver) exit(t testing.TB) *ipc.Exit {
	t.Helper()
	select {
	case e := <-d.exits:
		return e
	case <-time.After(waitLimit):
		t.Fatal("no child's exit was reported")
		return nil
	}
}

// finish frees the ring and checks that nothing of it is left in this process and that
// every child is gone.
func (d *driver) finish(t testing.TB) {
	t.Helper()
	if d.buf != nil {
		require.NoError(t, d.buf.Free())
	}
	left, err := testutil.MemfdLeft(memfdName)
	require.NoError(t, err)
	require.Empty(t, left, "the ring's memory is still mapped or open")
	for _, pid := range d.pids {
		require.True(t, testutil.Reaped(pid), "child %d is still in the process table", pid)
	}
}

// TestProcessBroadcast streams 10,000 steps of random sizes (most split over slots, the ring
// wrapped over a thousand times) to three reader processes, each answering a checksum of
// every step through its reply slot; the children check that nothing of the ring is left
// mapped in them, the driver that nothing is left in it.
func TestProcessBroadcast(t *testing.T) {
	const readers, steps = 3, 10_000
	cfg := testRing
	cfg.Readers = readers
	d := newDriver(t, "echo", cfg)
	var replies [][]byte
	var err error
	for i := range steps {
		replies, err = d.roundTrip(t, message(i, testRing.SlotBytes), replies)
		require.NoError(t, err, "step %d", i)
	}
	require.NoError(t, d.ring.Load().Send(nil)) // stop
	for range readers {
		e := d.exit(t)
		require.True(t, e.State.Success(), "%v", e)
	}
	d.finish(t)
}

// TestProcessReaderKilled SIGKILLs reader 1 mid-stream: the writer's wait for it ends with an
// error naming the reader it waited for and the child's pid and signal, long before its
// deadline; once the other reader is killed too, nothing is left.
func TestProcessReaderKilled(t *testing.T) {
	cfg := testRing
	cfg.Readers = 2
	d := newDriver(t, "echo", cfg)
	var replies [][]byte
	var err error
	for i := range 100 {
		replies, err = d.roundTrip(t, message(i, testRing.SlotBytes), replies)
		require.NoError(t, err, "step %d", i)
	}
	killed := time.Now()
	require.NoError(t, d.kids.Signal(d.pids[1], unix.SIGKILL))
	for i := 100; err == nil; i++ {
		_, err = d.roundTrip(t, message(i, testRing.SlotBytes), replies)
	}
	t.Logf("SIGKILL to the writer's error: %v", time.Since(killed))
	require.ErrorIs(t, err, device.ErrAborted, "the wait ends at the death, not at its deadline")
	require.ErrorContains(t, err, "writer waiting for reader") // any wait of the step ends
	require.ErrorContains(t, err, fmt.Sprintf("reader 1 (pid %d) exited: signal: killed", d.pids[1]))
	require.Equal(t, d.pids[1], d.exit(t).Pid)

	require.NoError(t, d.kids.Signal(d.pids[0], unix.SIGKILL))
	require.Equal(t, d.pids[0], d.exit(t).Pid)
	d.finish(t)
}
