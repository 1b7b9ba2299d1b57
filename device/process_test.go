//go:build linux

package device_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/testutil"
)

// The tests here run rank 1 as a real process: the test binary started again in a child's
// role (TestMain). Both sides build a node of two devices; the parent is device 0, the child
// device 1, and they share one buffer that one of them allocates, laid out in 32-bit words:
const (
	parentBell = 0  // SharedBellWords words: the parent waits here
	childBell  = 4  // SharedBellWords words: the child waits here
	flagWord   = 8  // what the waiter waits for
	dataWord   = 16 // first word of the data the writer fills
	dataWords  = 4096
	pingRounds = 2000
	socketVar  = "TPSLICE_TEST_SOCKET" // tells the child where to dial
	kindAsleep = 16                    // the child tells the parent it is about to wait
)

func pattern(i int) uint32 { return uint32(i)*2654435761 + 1 }

// TestMain lets the test binary play rank 1 (testutil.ChildCommand).
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

// runChild plays rank 1: dials the parent, then maps or exports the shared buffer.
func runChild(role string) error {
	conn, err := ipc.Dial(os.Getenv(socketVar))
	if err != nil {
		return err
	}
	defer conn.Close()
	n, err := device.NewNode(device.NodeConfig{Devices: 2, SMs: 1})
	if err != nil {
		return err
	}
	defer n.Close()
	d, _ := n.Device(1)
	var b *device.Buffer
	if role == "export" {
		if b, err = d.AllocShareable(dtype.F32, dataWord+dataWords); err != nil {
			return err
		}
		h, err := b.ExportShareable()
		if err != nil {
			return err
		}
		err = ipc.SendHandle(conn, h)
		if cerr := h.Close(); err == nil {
			err = cerr
		}
	} else {
		b, err = openHandle(conn, d)
	}
	if err != nil {
		return err
	}
	words := b.Uint32s()
	parent, _ := device.NewSharedBell("parent's", words[parentBell:])
	mine, _ := device.NewSharedBell("child's", words[childBell:])
	flag := func(v uint32) func() bool { return func() bool { return atomic.LoadUint32(&words[flagWord]) == v } }
	switch role {
	case "write": // fill the data, raise the flag, ring the parent
		for i := range dataWords {
			words[dataWord+i] = pattern(i)
		}
		atomic.StoreUint32(&words[flagWord], 1)
		parent.Ring()
	case "export": // wait for the parent's data, check it, answer
		if err := mine.WaitUntil(waitLimit, nil, flag(1)); err != nil {
			return err
		}
		for i := range dataWords {
			if got := words[dataWord+i]; got != pattern(i) {
				return fmt.Errorf("word %d: got %#x, want %#x", i, got, pattern(i))
			}
		}
		atomic.StoreUint32(&words[flagWord], 2)
		parent.Ring()
	case "ping": // the odd half of a ping-pong
		r := rand.New(rand.NewPCG(1, 7))
		for i := range uint32(pingRounds) {
			if err := mine.WaitUntil(waitLimit, nil, flag(2*i+1)); err != nil {
				return fmt.Errorf("round %d: %w", i, err)
			}
			dawdle(r)
			atomic.StoreUint32(&words[flagWord], 2*i+2)
			parent.Ring()
		}
	case "pong", "pong-spin": // answer pings until told to stop (BenchmarkBellRoundTrip)
		if role == "pong-spin" {
			mine.SpinFirst(pingSpin, pingYield)
		}
		if err := answer(mine, parent, &words[flagWord]); err != nil {
			return err
		}
	case "hang": // say so, then wait for what never comes, until killed
		if err := conn.Send(ipc.Message{Kind: kindAsleep}); err != nil {
			return err
		}
		return mine.WaitUntil(0, nil, never)
	default:
		return fmt.Errorf("unknown role")
	}
	if err := b.Free(); err != nil {
		return err
	}
	if left, err := memfdLeft(); err != nil || len(left) > 0 {
		return fmt.Errorf("after Free: %v left (%v)", left, err)
	}
	return nil
}

// openHandle receives a handle and maps it on d.
func openHandle(conn *ipc.Conn, d *device.Device) (*device.Buffer, error) {
	h, err := ipc.RecvHandle(conn)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return d.OpenPeer(h)
}

// parent is the test's side: device 0, the child it started, and what it heard of its exit.
type parent struct {
	dev   *device.Device
	kids  *ipc.Children
	ln    *ipc.Listener
	exits chan *ipc.Exit
	died  atomic.Pointer[ipc.Exit]
	bell  atomic.Pointer[device.SharedBell] // rung when the child dies, so that a waiter sees it
}

func newParent(t testing.TB) *parent {
	t.Helper()
	p := &parent{dev: dev(t, newNode(t, device.NodeConfig{Devices: 2, SMs: 1}), 0), exits: make(chan *ipc.Exit, 1)}
	kids, err := ipc.NewChildren(func(e *ipc.Exit) {
		p.died.Store(e)
		if b := p.bell.Load(); b != nil {
			b.Ring()
		}
		p.exits <- e
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, kids.Close()) })
	ln, err := ipc.Listen(kids.Has)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ln.Close()) })
	p.kids, p.ln = kids, ln
	return p
}

// start starts the child in role and accepts its connection.
func (p *parent) start(t testing.TB, role string) (*ipc.Conn, int) {
	t.Helper()
	pid, err := p.kids.Start("rank 1", testutil.ChildCommand(role, socketVar+"="+p.ln.Path()))
	require.NoError(t, err)
	conn, err := p.ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.Equal(t, pid, conn.Peer().Pid)
	return conn, pid
}

// wait waits on bell as a rank waits for a peer: until ready, the deadline, or the child's
// death, which the error then names.
func (p *parent) wait(bell *device.SharedBell, timeout time.Duration, ready func() bool) error {
	err := bell.WaitUntil(timeout, func() bool { return p.died.Load() != nil }, ready)
	if errors.Is(err, device.ErrAborted) {
		return fmt.Errorf("%w: %w", err, p.died.Load())
	}
	return err
}

// exit returns the child's exit once the poller reported it.
func (p *parent) exit(t testing.TB) *ipc.Exit {
	t.Helper()
	select {
	case e := <-p.exits:
		return e
	case <-time.After(waitLimit):
		t.Fatal("the child's exit was not reported")
		return nil
	}
}

// finish checks that the child succeeded and that nothing of either side is left.
func (p *parent) finish(t testing.TB, pid int, b *device.Buffer) {
	t.Helper()
	e := p.exit(t)
	require.Equal(t, pid, e.Pid)
	require.True(t, e.State.Success(), "%v", e)
	require.NoError(t, b.Free())
	requireNoMemfd(t)
	require.True(t, testutil.Reaped(pid), "the child is still in the process table")
}

// TestProcessHandleRoundTrip exports a buffer to a child process, which maps it, fills it and
// rings the parent's bell across the address-space boundary.
func TestProcessHandleRoundTrip(t *testing.T) {
	p := newParent(t)
	b, err := p.dev.AllocShareable(dtype.F32, dataWord+dataWords)
	require.NoError(t, err)
	words := b.Uint32s()
	bell := newBell(t, "rank 1's data", words[parentBell:])
	p.bell.Store(bell)
	conn, pid := p.start(t, "write")
	h, err := b.ExportShareable()
	require.NoError(t, err)
	require.NoError(t, ipc.SendHandle(conn, h))
	require.NoError(t, h.Close())

	require.NoError(t, p.wait(bell, waitLimit, func() bool { return atomic.LoadUint32(&words[flagWord]) == 1 }))
	for i := range dataWords {
		require.Equal(t, pattern(i), words[dataWord+i], "word %d", i)
	}
	p.finish(t, pid, b)
}

// TestProcessHandleReverse has the child export and the parent map, fill and ring.
func TestProcessHandleReverse(t *testing.T) {
	p := newParent(t)
	conn, pid := p.start(t, "export")
	b, err := openHandle(conn, p.dev)
	require.NoError(t, err)
	require.Equal(t, 1, b.Owner())
	words := b.Uint32s()
	child, bell := newBell(t, "child's", words[childBell:]), newBell(t, "rank 1's answer", words[parentBell:])
	p.bell.Store(bell)
	for i := range dataWords {
		words[dataWord+i] = pattern(i)
	}
	atomic.StoreUint32(&words[flagWord], 1)
	child.Ring()
	require.NoError(t, p.wait(bell, waitLimit, func() bool { return atomic.LoadUint32(&words[flagWord]) == 2 }))
	p.finish(t, pid, b)
}

// TestProcessPingPong bounces a counter between the processes, each sleeping in FUTEX_WAIT
// for the other's ring; a lost wake-up across the boundary would stall a side until its
// deadline.
func TestProcessPingPong(t *testing.T) {
	p := newParent(t)
	b, err := p.dev.AllocShareable(dtype.F32, dataWord)
	require.NoError(t, err)
	words := b.Uint32s()
	mine, child := newBell(t, "rank 1's ping", words[parentBell:]), newBell(t, "child's", words[childBell:])
	p.bell.Store(mine)
	conn, pid := p.start(t, "ping")
	h, err := b.ExportShareable()
	require.NoError(t, err)
	require.NoError(t, ipc.SendHandle(conn, h))
	require.NoError(t, h.Close())
	r := rand.New(rand.NewPCG(0, 7))
	for i := range uint32(pingRounds) {
		if i > 0 {
			require.NoError(t, p.wait(mine, waitLimit, func() bool { return atomic.LoadUint32(&words[flagWord]) == 2*i }), "round %d", i)
		}
		dawdle(r)
		atomic.StoreUint32(&words[flagWord], 2*i+1)
		child.Ring()
	}
	require.NoError(t, p.wait(mine, waitLimit, func() bool { return atomic.LoadUint32(&words[flagWord]) == 2*pingRounds }))
	p.finish(t, pid, b)
}

// TestProcessKilledMidWait SIGKILLs the child while both sides sleep in the kernel: the pidfd
// poller reports the death and the parent's wait ends with an error that names the child, long
// before its deadline.
func TestProcessKilledMidWait(t *testing.T) {
	p := newParent(t)
	b, err := p.dev.AllocShareable(dtype.F32, dataWord)
	require.NoError(t, err)
	words := b.Uint32s()
	bell := newBell(t, "rank 1's data", words[parentBell:])
	p.bell.Store(bell)
	conn, pid := p.start(t, "hang")
	h, err := b.ExportShareable()
	require.NoError(t, err)
	require.NoError(t, ipc.SendHandle(conn, h))
	require.NoError(t, h.Close())
	m, err := conn.Recv()
	require.NoError(t, err)
	require.EqualValues(t, kindAsleep, m.Kind)

	killed := make(chan time.Time, 1)
	go func() {
		time.Sleep(20 * time.Millisecond) // let both sides go to sleep in FUTEX_WAIT
		killed <- time.Now()
		if err := p.kids.Signal(pid, unix.SIGKILL); err != nil {
			t.Error(err)
		}
	}()
	err = p.wait(bell, 3*waitLimit, func() bool { return atomic.LoadUint32(&words[flagWord]) == 1 })
	t.Logf("SIGKILL to the parent's wait ending: %v", time.Since(<-killed))
	require.ErrorIs(t, err, device.ErrAborted, "the wait ends at the death, not at its deadline")
	require.ErrorContains(t, err, fmt.Sprintf(`shared bell "rank 1's data": aborted: rank 1 (pid %d) exited: signal: killed`, pid))
	e := p.exit(t)
	require.Equal(t, pid, e.Pid)
	require.NoError(t, b.Free())
	requireNoMemfd(t)
	require.True(t, testutil.Reaped(pid), "the killed child is still in the process table")
}
