package comm

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/tpslice/tpslice/device"
)

// EnvAlgo names the environment variable that forces an all-reduce algorithm when the
// configuration does not (vLLM and NCCL users expect such a switch).
const EnvAlgo = "TPSLICE_ALLREDUCE_ALGO"

// EnvProto names the environment variable that forces the protocol of the ring and the
// tree when the configuration does not, as NCCL_PROTO does for NCCL: LL, LL128 or Simple.
const EnvProto = "TPSLICE_PROTO"

// Defaults of Config.
const (
	DefaultBufferBytes  = 8 << 20
	DefaultLamportBytes = 256 << 10
	DefaultTimeout      = 60 * time.Second
	// MaxBlocks caps the grid of a collective kernel (and sizes the flag arrays).
	MaxBlocks = 64
)

const publishedDepth = 4

// Config configures a communicator. The zero value is usable.
type Config struct {
	// Devices lists the node's device ids for ranks 0..n-1; nil means every device.
	Devices []int
	// BufferBytes is the capacity of each rank's registered peer buffers; larger messages
	// are processed in chunks of this size.
	BufferBytes int
	// LamportBytes is the largest message chunk of the flag-free one-shot; each rank holds
	// 3·n·LamportBytes for it (three phases, one slot per peer).
	LamportBytes int
	// Blocks is the grid of a collective kernel for large messages; 0 means the device's
	// SM count. It must be the same for every rank (it decides how barriers pair up).
	Blocks int
	// Timeout bounds every wait on a peer; the call then fails naming the missing ranks.
	Timeout time.Duration
	// Algo forces an all-reduce algorithm; Auto defers to $TPSLICE_ALLREDUCE_ALGO, then to
	// Table, then to the built-in rule.
	Algo Algo
	// Proto forces the protocol of the ring and the tree (LL, LL128, Simple); ProtoAuto
	// defers to $TPSLICE_PROTO, then to Table, then to Simple.
	Proto Proto
	// Table selects the algorithm by world size and message size (model or autotuned).
	Table *Table
	// Fault, when set, injects one fault into a collective call (see FaultInjector). Give
	// every communicator a process rebuilds the same injector, so that the fault fires
	// once, counted from start-up. New does not read $TPSLICE_FAULT: FaultFromEnv does.
	Fault *FaultInjector
	// Wire is the format one-shot and two-shot all-reduces move their inputs in: the
	// exact dtype (the default), or bf16 or fp8 for fewer bytes at a stated error (Wire).
	// Auto then picks only between those two; forcing another algorithm is an error.
	Wire Wire
}

// Communicator connects n devices of one node for collectives.
type Communicator struct {
	node  *device.Node
	n     int
	cfg   Config
	force Algo
	proto Proto // forced protocol of ring and tree; ProtoAuto: selected per call
	ranks []*Rank

	mcast  *device.Multicast // over the staging buffers; nil without a switch or across hosts
	dtree  *doubleTree       // the tree all-reduce's two trees
	layout hostLayout        // the ranks by host, for the two-level all-reduce
	// slotWords is the size of an LL/LL128 slot (protobuf.go)
	slotWords int
	// published holds each rank's most recent calls by sequence number, for mismatch
	// checks; a peer runs at most one call ahead, so a few slots suffice.
	published [][publishedDepth]atomic.Pointer[callDesc]
	failed    atomic.Pointer[error] // first failure; the communicator is unusable after it
	table     atomic.Pointer[Table] // selection table for Auto; nil: the built-in rule
}

// New builds a communicator: it allocates every rank's registered buffers, exports them and
// opens every peer's, and binds the multicast object where the fabric has a switch.
func New(node *device.Node, cfg Config) (*Communicator, error) {
	if cfg.Devices == nil {
		for i := range node.NumDevices() {
			cfg.Devices = append(cfg.Devices, i)
		}
	}
	n := len(cfg.Devices)
	if n < 1 || n > device.MaxNodeDevices {
		return nil, fmt.Errorf("comm: a communicator needs 1 to %d ranks, got %d", device.MaxNodeDevices, n)
	}
	if cfg.BufferBytes == 0 {
		cfg.BufferBytes = DefaultBufferBytes
	}
	if cfg.LamportBytes == 0 {
		cfg.LamportBytes = DefaultLamportBytes
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.BufferBytes < 4096 || cfg.BufferBytes%64 != 0:
		return nil, fmt.Errorf("comm: BufferBytes must be a multiple of 64 and at least 4096, got %d", cfg.BufferBytes)
	case cfg.LamportBytes < 64 || cfg.LamportBytes%64 != 0:
		return nil, fmt.Errorf("comm: LamportBytes must be a positive multiple of 64, got %d", cfg.LamportBytes)
	case cfg.Blocks < 0 || cfg.Blocks > MaxBlocks:
		return nil, fmt.Errorf("comm: Blocks must be 0..%d, got %d", MaxBlocks, cfg.Blocks)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("comm: Timeout must be positive, got %v", cfg.Timeout)
	case cfg.Fault != nil && cfg.Fault.fault.Rank >= n:
		return nil, fmt.Errorf("comm: %s %v: rank %d, but the communicator has %d ranks", EnvFault, cfg.Fault.fault, cfg.Fault.fault.Rank, n)
	}
	force := cfg.Algo
	if force == Auto {
		if env := os.Getenv(EnvAlgo); env != "" {
			a, err := ParseAlgo(env)
			if err != nil {
				return nil, fmt.Errorf("comm: $%s: %w", EnvAlgo, err)
			}
			force = a
		}
	}
	if err := checkWire(cfg.Wire, force); err != nil {
		return nil, err
	}
	proto, err := forcedProto(cfg.Proto)
	if err != nil {
		return nil, err
	}
	if s, ok := force.spec(); ok && s.needs == needMulticast && !node.Fabric().HasMulticast() {
		return nil, fmt.Errorf("comm: algorithm %v forced, but the %v fabric has no multicast switch", force, node.Fabric())
	}
	if cfg.Blocks == 0 {
		d0, _ := node.Device(0)
		cfg.Blocks = min(d0.NumSMs(), MaxBlocks)
	}
	c := &Communicator{node: node, n: n, cfg: cfg, force: force, proto: proto, dtree: buildDoubleTree(n), published: make([][publishedDepth]atomic.Pointer[callDesc], n)}
	c.table.Store(cfg.Table)
	c.layout = newHostLayout(node, cfg.Devices)
	if s, ok := force.spec(); ok && s.needs == needHosts && c.layout.err != nil {
		return nil, fmt.Errorf("comm: algorithm %v forced, but %w", force, c.layout.err)
	}
	seen := map[int]bool{}
	for r, id := range cfg.Devices {
		dev, err := node.Device(id)
		if err != nil {
			return nil, fmt.Errorf("comm: rank %d: %w", r, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("comm: rank %d: device %d already belongs to another rank", r, id)
		}
		seen[id] = true
		rk, err := newRank(c, r, dev)
		if err != nil {
			c.free()
			return nil, err
		}
		c.ranks = append(c.ranks, rk)
	}
	if err := c.connect(); err != nil {
		c.free()
		return nil, err
	}
	if err := c.connectProtos(); err != nil {
		c.free()
		return nil, err
	}
	return c, nil
}

// connect exports every rank's buffers and opens them on every peer, as ranks exchange
// CUDA IPC handles, and binds the multicast object where the fabric allows it.
func (c *Communicator) connect() error {
	type handles struct{ staging, tmp, signal, lamport device.IPCHandle }
	hs := make([]handles, c.n)
	for r, rk := range c.ranks {
		var err error
		for _, e := range []struct {
			b *device.Buffer
			h *device.IPCHandle
		}{{rk.staging, &hs[r].staging}, {rk.tmp, &hs[r].tmp}, {rk.signal, &hs[r].signal}, {rk.lamport, &hs[r].lamport}} {
			if *e.h, err = e.b.Export(); err != nil {
				return fmt.Errorf("comm: rank %d: %w", r, err)
			}
		}
	}
	for r, rk := range c.ranks {
		rk.peers = make([]peerView, c.n)
		for p := range c.n {
			if p == r {
				rk.peers[p] = viewOf(rk.staging, rk.tmp, rk.signal, rk.lamport)
				continue
			}
			var bufs [4]*device.Buffer
			for i, h := range []device.IPCHandle{hs[p].staging, hs[p].tmp, hs[p].signal, hs[p].lamport} {
				b, err := rk.dev.OpenPeer(h)
				if err != nil {
					return fmt.Errorf("comm: rank %d opening rank %d's buffers: %w", r, p, err)
				}
				bufs[i] = b
			}
			rk.peers[p] = viewOf(bufs[0], bufs[1], bufs[2], bufs[3])
		}
	}
	if c.node.Fabric().HasMulticast() && c.Hosts() == 1 { // the switch spans one host
		bufs := make([]*device.Buffer, c.n)
		for r, rk := range c.ranks {
			bufs[r] = rk.staging
		}
		mc, err := c.node.NewMulticast(bufs)
		if err != nil {
			return fmt.Errorf("comm: binding the multicast object: %w", err)
		}
		c.mcast = mc
	}
	return nil
}

func (c *Communicator) free() {
	for _, rk := range c.ranks {
		for _, b := range []*device.Buffer{rk.staging, rk.tmp, rk.signal, rk.lamport, rk.protoBuf} {
			if b != nil {
				_ = b.Free()
			}
		}
	}
}

// Close fails the communicator with ErrClosed, so that collectives still in flight (a
// stalled rank's too) stop waiting at once, and frees the registered buffers. It never
// blocks, broken or not; Err reports ErrClosed afterwards unless an earlier failure came.
func (c *Communicator) Close() error {
	c.fail(fmt.Errorf("comm: %w", ErrClosed))
	c.free()
	return nil
}

// Size returns the number of ranks.
func (c *Communicator) Size() int { return c.n }

// Rank returns rank r's handle, through which that rank issues its collectives.
func (c *Communicator) Rank(r int) *Rank { return c.ranks[r] }

// HasNVLS reports whether the NVLS algorithm is available (the fabric has a switch).
func (c *Communicator) HasNVLS() bool { return c.mcast != nil }

// Multicast returns the multicast object over the ranks' staging buffers that NVLS calls
// reduce through, or nil where HasNVLS is false. Its Counts show which calls went through
// the switch, which their results (one-shot's bits) cannot.
func (c *Communicator) Multicast() *device.Multicast { return c.mcast }

// Recorder returns rank r's flight recorder.
func (c *Communicator) Recorder(r int) *Recorder { return &c.ranks[r].rec }

// Err returns the failure that made the communicator unusable, or nil. A communicator
// that failed stays failed: its ranks no longer agree on their barriers' state, so a
// process rebuilds it (New) to go on.
func (c *Communicator) Err() error {
	if p := c.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fail makes err the communicator's failure unless one came first, and wakes every rank's
// waiters so that they see it.
func (c *Communicator) fail(err error) {
	c.failed.CompareAndSwap(nil, &err)
	c.ringAll()
}

// ErrFailed is returned (wrapped) for calls on a communicator that an earlier error left
// unusable: its ranks no longer agree on the state of their barriers.
var ErrFailed = errors.New("communicator failed earlier")

// ErrClosed is the failure (wrapped) of a communicator that was closed.
var ErrClosed = errors.New("communicator closed")

// Available reports whether algorithm a can run on this communicator: what it needs (a
// multicast object, ranks on several hosts) is there.
func (c *Communicator) Available(a Algo) bool {
	s, ok := a.spec()
	if !ok {
		return false
	}
	switch s.needs {
	case needMulticast:
		return c.mcast != nil
	case needHosts:
		return c.layout.err == nil
	}
	return true
}

// Pick returns the algorithm and protocol an Auto all-reduce of the given size runs: bytes
// per rank as the wire carries them (MessageBytes). The protocol is PickProto's.
func (c *Communicator) Pick(bytes int) Choice {
	a := c.pickAlgo(bytes)
	return Choice{Algo: a, Proto: c.PickProto(a, bytes)}
}

// pickAlgo is Pick's algorithm: the forced one, else the table's where it is available,
// else the built-in rule.
func (c *Communicator) pickAlgo(bytes int) Algo {
	if c.force != Auto {
		return c.force
	}
	if c.n == 1 {
		return OneShot
	}
	if c.cfg.Wire != WireExact {
		return c.pickWire(bytes)
	}
	if t := c.table.Load(); t != nil && max(t.Hosts, 1) == c.Hosts() {
		if ch, ok := t.Pick(c.n, int64(bytes)); ok && c.Available(ch.Algo) {
			return ch.Algo
		}
	}
	if c.Hosts() > 1 {
		return multiHostRule(c)
	}
	return DefaultRule(c.n, bytes, c.node.Fabric())
}

// DefaultRule is the selection without a table, vLLM's published defaults for a full
// NVLink node: one-shot when n = 2, or n ≤ 4 and S < 512 KiB, or n ≤ 8 and S < 256 KiB;
// two-shot otherwise. On PCIe beyond 2 GPUs peer-buffer algorithms lose to the ring.
func DefaultRule(n, bytes int, fabric device.Fabric) Algo {
	switch {
	case fabric == device.PCIe && n > 2:
		return Ring
	case n <= 2, n <= 4 && bytes < 512<<10, bytes < 256<<10:
		return OneShot
	}
	return TwoShot
}

// Blocks returns the grid of a collective kernel for large messages (Config.Blocks).
func (c *Communicator) Blocks() int { return c.cfg.Blocks }

// Fabric returns the interconnect of the communicator's node.
func (c *Communicator) Fabric() device.Fabric { return c.node.Fabric() }
