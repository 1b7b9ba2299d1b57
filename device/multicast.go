package device

import (
	"fmt"
	"sync/atomic"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// Multicast binds one buffer per device, all of the same size, so that a load returns the
// sum of an address over every bound buffer and a store writes every bound buffer, as
// NVSwitch multicast objects do for multimem.ld_reduce and multimem.st. As with those
// instructions, each access names the element type it reads the memory as. The CPU runtime
// emulates the switch: the reduction runs on the calling SM.
type Multicast struct {
	bytes int
	bufs  []*Buffer // in device order: the order every load sums in

	// Elements load-reduced and stored so far, over every caller (counts[0] and [1]): the
	// NVLS collectives give one-shot's bits, so these are what shows that a call went
	// through the switch (as a profiler counts multimem instructions). Bound across
	// processes, they live in memory every process maps.
	counts []uint64
}

// MulticastCounts is what a multicast object has moved since it was bound, in elements.
type MulticastCounts struct {
	// LoadReduced counts the elements that load-reduces returned (one per address read,
	// however many buffers it summed).
	LoadReduced int64
	// Stored counts the elements that stores wrote (one per address, however many buffers
	// it wrote).
	Stored int64
}

// NewMulticast binds bufs (one per device, in rank order) into a multicast object. It fails
// unless the node's fabric has a multicast-capable switch and every buffer is on one host:
// the switch spans a host, not the InfiniBand fabric between hosts.
func (n *Node) NewMulticast(bufs []*Buffer) (*Multicast, error) {
	if !n.fabric.HasMulticast() {
		return nil, fmt.Errorf("device: multicast needs an NVSwitch fabric; this node's is %v", n.fabric)
	}
	if len(bufs) == 0 {
		return nil, fmt.Errorf("device: multicast needs at least one buffer")
	}
	seen := map[*Device]bool{}
	for i, b := range bufs {
		switch {
		case b.peer:
			return nil, fmt.Errorf("device: multicast buffer %d: %v is a peer mapping; bind the owner's buffer", i, b)
		case b.dev.node != n:
			return nil, fmt.Errorf("device: multicast buffer %d: %v belongs to another node", i, b)
		case n.HostOf(b.dev.id) != n.HostOf(bufs[0].dev.id):
			return nil, fmt.Errorf("device: multicast buffer %d: %v is on host %d, buffer 0 on host %d; a multicast object spans one host's switch", i, b, n.HostOf(b.dev.id), n.HostOf(bufs[0].dev.id))
		case seen[b.dev]:
			return nil, fmt.Errorf("device: multicast buffer %d: %v binds a second buffer on the same device", i, b)
		case b.Bytes() != bufs[0].Bytes():
			return nil, fmt.Errorf("device: multicast buffer %d: %v differs in size from buffer 0 (%v)", i, b, bufs[0])
		}
		seen[b.dev] = true
	}
	return &Multicast{bytes: bufs[0].Bytes(), bufs: append([]*Buffer(nil), bufs...), counts: make([]uint64, 2)}, nil
}

// NewSharedMulticast binds, in one process of ranks that live in processes of their own,
// a multicast object over bufs (one per device, in rank order): this process's buffer and
// its mappings of the peers' (OpenPeer of their shareable handles), as cuMulticastCreate's
// object is exported, imported and bound in every process. Its element counters are the
// two words of counters, shared memory every process binds the same words of, so that the
// counts show every process's accesses.
func (n *Node) NewSharedMulticast(bufs []*Buffer, counters []uint64) (*Multicast, error) {
	if !n.fabric.HasMulticast() {
		return nil, fmt.Errorf("device: multicast needs an NVSwitch fabric; this node's is %v", n.fabric)
	}
	if len(bufs) == 0 || len(counters) != 2 {
		return nil, fmt.Errorf("device: shared multicast needs at least one buffer and 2 counter words, got %d and %d", len(bufs), len(counters))
	}
	seen := map[int]bool{}
	for i, b := range bufs {
		switch {
		case b.dev.node != n:
			return nil, fmt.Errorf("device: multicast buffer %d: %v belongs to another node", i, b)
		case n.HostOf(b.owner) != n.HostOf(bufs[0].owner):
			return nil, fmt.Errorf("device: multicast buffer %d: %v is on host %d, buffer 0 on host %d; a multicast object spans one host's switch", i, b, n.HostOf(b.owner), n.HostOf(bufs[0].owner))
		case seen[b.owner]:
			return nil, fmt.Errorf("device: multicast buffer %d: %v binds a second buffer of device %d", i, b, b.owner)
		case b.Bytes() != bufs[0].Bytes():
			return nil, fmt.Errorf("device: multicast buffer %d: %v differs in size from buffer 0 (%v)", i, b, bufs[0])
		}
		seen[b.owner] = true
	}
	return &Multicast{bytes: bufs[0].Bytes(), bufs: append([]*Buffer(nil), bufs...), counts: counters}, nil
}

// Bytes returns the size of each bound buffer.
func (m *Multicast) Bytes() int { return m.bytes }

// Counts returns the elements load-reduced and stored so far; failed accesses count none.
func (m *Multicast) Counts() MulticastCounts {
	return MulticastCounts{LoadReduced: int64(atomic.LoadUint64(&m.counts[0])), Stored: int64(atomic.LoadUint64(&m.counts[1]))}
}

// LoadReduce reads the bound memory as elements of t and writes into dst the sum, in device
// order and accumulated in f32, of elements [offset, offset+len(dst)) over every buffer:
//
//	for i := range dst { dst[i] = Σ_d widen(bufs[d][offset+i]) }
func (m *Multicast) LoadReduce(t dtype.DType, dst []float32, offset int) error {
	if err := m.check("load-reduce", t, offset, len(dst)); err != nil {
		return err
	}
	atomic.AddUint64(&m.counts[0], uint64(len(dst)))
	hi := offset + len(dst)
	if t == dtype.F32 {
		var views [MaxDevices][]float32 // on the stack: no allocation per load
		srcs := views[:len(m.bufs)]
		for d, b := range m.bufs {
			srcs[d] = b.Float32s()[offset:hi]
		}
		vec.SumF32(dst, srcs)
		return nil
	}
	var views [MaxDevices][]uint16
	srcs := views[:len(m.bufs)]
	for d, b := range m.bufs {
		srcs[d] = b.Uint16s()[offset:hi]
	}
	vec.Sum16ToF32(t, dst, srcs)
	return nil
}

// Store narrows src to elements of t and writes them at element offset into every bound
// buffer.
func (m *Multicast) Store(t dtype.DType, offset int, src []float32) error {
	if err := m.check("store", t, offset, len(src)); err != nil {
		return err
	}
	atomic.AddUint64(&m.counts[1], uint64(len(src)))
	hi := offset + len(src)
	for _, b := range m.bufs {
		if t == dtype.F32 {
			copy(b.Float32s()[offset:hi], src)
		} else {
			vec.Narrow(t, b.Uint16s()[offset:hi], src)
		}
	}
	return nil
}

func (m *Multicast) check(op string, t dtype.DType, offset, count int) error {
	if !t.Scalar() {
		return fmt.Errorf("device: multicast %s: dtype %v is not an element type", op, t)
	}
	if n := m.bytes / t.Size(); offset < 0 || count < 0 || offset+count > n {
		return fmt.Errorf("device: multicast %s [%d, %d) out of range: buffers hold %d %v", op, offset, offset+count, n, t)
	}
	return nil
}
