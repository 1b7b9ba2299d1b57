package device_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// waitLimit bounds every wait a test makes on work that should finish promptly: long enough
// never to fire on a loaded machine, short enough that a hang fails instead of stalling.
const waitLimit = 10 * time.Second

// newNode builds a node and closes it when the test ends.
func newNode(t testing.TB, cfg device.NodeConfig) *device.Node {
	t.Helper()
	n, err := device.NewNode(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n
}

// dev returns device id of n.
func dev(t testing.TB, n *device.Node, id int) *device.Device {
	t.Helper()
	d, err := n.Device(id)
	require.NoError(t, err)
	return d
}

// newStream creates a stream on d.
func newStream(t *testing.T, d *device.Device, name string, budget int) *device.Stream {
	t.Helper()
	s, err := d.NewStream(name, budget)
	require.NoError(t, err)
	return s
}

// gate is a channel-based latch a kernel blocks on until the test opens it. Waiting gives up
// after waitLimit so that a broken runtime fails the test rather than hanging it.
type gate chan struct{}

func newGate() gate { return make(gate) }

func (g gate) open() { close(g) }

func (g gate) wait() error {
	select {
	case <-g:
		return nil
	case <-time.After(waitLimit):
		return errTimeout
	}
}

var errTimeout = errors.New("test gate not opened in time")

// concurrency measures how many goroutines are inside a region at once.
type concurrency struct {
	cur, max atomic.Int64
}

func (c *concurrency) enter() {
	n := c.cur.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (c *concurrency) leave() { c.cur.Add(-1) }

// log is an append-only list written from kernels and host functions.
type log struct {
	mu    sync.Mutex
	items []string
}

func (l *log) add(s string) {
	l.mu.Lock()
	l.items = append(l.items, s)
	l.mu.Unlock()
}

func (l *log) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.items...)
}
