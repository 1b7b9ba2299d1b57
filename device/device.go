package device

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
	"sync"
	"sync/atomic"
)

// Device is one accelerator: memory, SMs, streams and a doorbell that wakes its waiters.
type Device struct {
	node     *Node
	id       int
	numSMs   int
	capacity int64 // 0: no cap
	cpus     []int // the CPUs its SM workers are pinned to; nil: not pinned

	used      atomic.Int64
	capturing atomic.Int32 // streams of this device under capture
	sms       smPool       // the idle SMs
	bell      doorbell

	mu      sync.Mutex
	streams []*Stream
	closed  bool
}

func newDevice(n *Node, id, sms int, capacity int64, cpus []int) *Device {
	d := &Device{node: n, id: id, numSMs: sms, capacity: capacity, cpus: cpus}
	d.sms.init(sms)
	d.bell.init()
	return d
}

// ID returns the device's index on its node.
func (d *Device) ID() int { return d.id }

// NumSMs returns how many kernel blocks the device runs at once.
func (d *Device) NumSMs() int { return d.numSMs }

// Node returns the node the device belongs to.
func (d *Device) Node() *Node { return d.node }

// MemoryUsed returns the bytes currently allocated on the device.
func (d *Device) MemoryUsed() int64 { return d.used.Load() }

// String names the device as errors print it.
func (d *Device) String() string { return fmt.Sprintf("device %d", d.id) }

// Alloc allocates a zeroed buffer of count values of dtype t (for a block type, a whole
// number of its blocks).
func (d *Device) Alloc(t dtype.DType, count int) (*Buffer, error) {
	if err := d.reserve("alloc", t, count); err != nil {
		return nil, err
	}
	return newBuffer(d, t, count), nil
}

// reserve checks an allocation of count values of t and counts its bytes as used, or returns
// an error that names op.
func (d *Device) reserve(op string, t dtype.DType, count int) error {
	if !t.Valid() {
		return fmt.Errorf("%v: %s: invalid dtype %v", d, op, t)
	}
	if count < 0 {
		return fmt.Errorf("%v: %s: negative element count %d", d, op, count)
	}
	if !t.Whole(count) {
		return fmt.Errorf("%v: %s of %d %v values: not a whole number of %d-value blocks", d, op, count, t, t.BlockSize())
	}
	if d.capturing.Load() > 0 {
		// A graph bakes in the buffers it uses; memory must exist before capture begins.
		return fmt.Errorf("%v: %s of %d %v: %w: allocate before capturing", d, op, count, t, ErrCapture)
	}
	bytes := int64(t.Bytes(count))
	if d.capacity > 0 {
		if used := d.used.Add(bytes); used > d.capacity {
			d.used.Add(-bytes)
			return fmt.Errorf("%v: out of memory: %d bytes requested, %d of %d in use", d, bytes, used-bytes, d.capacity)
		}
	} else {
		d.used.Add(bytes)
	}
	return nil
}

// Ring wakes goroutines blocked in WaitUntil on this device. Writers call it after they
// store a flag that a waiter on this device may be polling.
func (d *Device) Ring() { d.bell.ring() }

// NewStream creates a stream on the device. A budget of k > 0 SMs limits how many blocks of
// one kernel on this stream run at once (comm kernels on a few SMs, compute on the rest);
// 0 means all of the device's SMs.
func (d *Device) NewStream(name string, smBudget int) (*Stream, error) {
	if smBudget < 0 || smBudget > d.numSMs {
		return nil, fmt.Errorf("%v: stream %q: SM budget %d out of range 0..%d", d, name, smBudget, d.numSMs)
	}
	if smBudget == 0 {
		smBudget = d.numSMs
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("%v: stream %q: device is closed", d, name)
	}
	s, err := newStream(d, name, smBudget)
	if err != nil {
		return nil, err
	}
	d.streams = append(d.streams, s)
	return s, nil
}

func (d *Device) close() error {
	d.mu.Lock()
	streams := d.streams
	d.streams, d.closed = nil, true
	d.mu.Unlock()
	for _, s := range streams {
		s.stop()
	}
	return nil
}
