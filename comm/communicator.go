package comm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

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
	// Memory allocates, exports and opens the registered buffers: nil means
	// device.InProcessMemory for New and device.SharedMemory for Join, whose peers are in
	// other processes.
	Memory device.PeerMemory
}

// Communicator connects n devices of one node for collectives.
type Communicator struct {
	node  *device.Node
	n     int
	cfg   Config
	force Algo
	proto Proto // forced protocol of ring and tree; ProtoAuto: selected per call
	// ranks holds the ranks of this process by index, nil for a rank in another process;
	// local lists the former.
	ranks []*Rank
	local []*Rank
	mem   device.PeerMemory
	// inProcess is set when the memory is Go memory (InProcessMemory), so every rank lives
	// in this process: the ranks' devices are then their doorbells (bell).
	inProcess bool
	mapped    []*device.Buffer // the peers' buffers this process opened, closed with it
	boot      Bootstrap        // how the ranks of other processes exchange handles (Join); nil in New
	// closeMu guards the mappings against MarkExited (a driver's callback) while Close
	// unmaps them; closed is set once they are gone.
	closeMu sync.RWMutex
	closed  bool

	mcast  *device.Multicast // over the staging buffers; nil without a switch or across hosts
	dtree  *doubleTree       // the tree all-reduce's two trees
	layout hostLayout        // the ranks by host, for the two-level all-reduce
	// slotWords is the size of an LL/LL128 slot (protobuf.go)
	slotWords int
	failed    atomic.Pointer[error] // first failure; the communicator is unusable after it
	table     atomic.Pointer[Table] // selection table for Auto; nil: the built-in rule
}

// New builds a communicator whose ranks all live in this process: it allocates every
// rank's registered buffers, exports them and opens every peer's, and binds the multicast
// object where the fabric has a switch.
func New(node *device.Node, cfg Config) (*Communicator, error) {
	if cfg.Memory == nil {
		cfg.Memory = device.InProcessMemory{}
	}
	c, err := newCommunicator(node, cfg)
	if err != nil {
		return nil, err
	}
	for r := range c.n {
		if err := c.addRank(r); err != nil {
			c.free()
			return nil, err
		}
	}
	mine := make([][]device.IPCHandle, c.n)
	defer func() {
		for _, hs := range mine {
			closeHandles(hs)
		}
	}()
	for r, rk := range c.ranks {
		if mine[r], err = c.export(rk); err != nil {
			c.free()
			return nil, err
		}
	}
	if err := c.connect(mine); err != nil {
		c.free()
		return nil, err
	}
	return c, nil
}

// newCommunicator checks cfg and builds a communicator without ranks.
func newCommunicator(node *device.Node, cfg Config) (*Communicator, error) {
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
	_, inProcess := cfg.Memory.(device.InProcessMemory)
	c := &Communicator{node: node, n: n, cfg: cfg, force: force, proto: proto, dtree: buildDoubleTree(n),
		ranks: make([]*Rank, n), mem: cfg.Memory, inProcess: inProcess}
	c.table.Store(cfg.Table)
	c.layout = newHostLayout(node, cfg.Devices)
	if s, ok := force.spec(); ok && s.needs == needHosts && c.layout.err != nil {
		return nil, fmt.Errorf("comm: algorithm %v forced, but %w", force, c.layout.err)
	}
	seen := map[int]bool{}
	for r, id := range cfg.Devices {
		if _, err := node.Device(id); err != nil {
			return nil, fmt.Errorf("comm: rank %d: %w", r, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("comm: rank %d: device %d already belongs to another rank", r, id)
		}
		seen[id] = true
	}
	return c, nil
}

// addRank allocates the registered buffers of rank r, which lives in this process.
func (c *Communicator) addRank(r int) error {
	dev, _ := c.node.Device(c.cfg.Devices[r]) // checked by newCommunicator
	rk, err := newRank(c, r, dev)
	if err != nil {
		return err
	}
	c.ranks[r], c.local = rk, append(c.local, rk)
	return nil
}

// export exports rank rk's registered buffers, in the order they travel.
func (c *Communicator) export(rk *Rank) ([]device.IPCHandle, error) {
	var hs []device.IPCHandle
	for _, b := range rk.registered() {
		h, err := c.mem.Export(b)
		if err != nil {
			closeHandles(hs)
			return nil, fmtRankErr(rk.rank, "exporting registered buffers", err)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// closeHandles closes the files of handles (those of exports to other processes).
func closeHandles(hs []device.IPCHandle) {
	for _, h := range hs {
		_ = h.Close()
	}
}

// connect opens, on every rank of this process, every peer's registered buffers from the
// handles of every rank (index: rank), as ranks exchange CUDA IPC handles, and binds the
// multicast object where the fabric allows it.
func (c *Communicator) connect(handles [][]device.IPCHandle) error {
	want := len(regNames)
	if c.n == 1 {
		want = regProto
	}
	for p, hs := range handles {
		if len(hs) != want {
			return fmt.Errorf("comm: rank %d sent %d handles of registered buffers, want %d", p, len(hs), want)
		}
	}
	staging := make([]*device.Buffer, c.n) // what the multicast object binds
	for _, rk := range c.local {
		rk.peers = make([]peerView, c.n)
		for p := range c.n {
			own := rk.registered()
			bufs := own
			if p != rk.rank {
				bufs = make([]*device.Buffer, len(handles[p]))
				for i, h := range handles[p] {
					b, err := c.mem.Open(rk.dev, h)
					if err != nil {
						return fmt.Errorf("comm: rank %d opening rank %d's %s buffer: %w", rk.rank, p, regNames[i], err)
					}
					c.mapped = append(c.mapped, b)
					bufs[i] = b
					if b.Bytes() != own[i].Bytes() {
						return fmt.Errorf("comm: rank %d's %s buffer holds %d bytes, rank %d's %d: the ranks were configured differently", p, regNames[i], b.Bytes(), rk.rank, own[i].Bytes())
					}
				}
			}
			rk.peers[p] = viewOf(bufs)
			rk.peers[p].bell = c.bellOf(p, rk.peers[p].ctl)
			if staging[p] == nil || p == rk.rank {
				staging[p] = bufs[regStaging]
			}
		}
	}
	if !c.node.Fabric().HasMulticast() || c.Hosts() > 1 { // the switch spans one host
		return nil
	}
	var err error
	if len(c.local) == c.n { // every staging buffer is an owner's
		c.mcast, err = c.node.NewMulticast(staging)
	} else {
		c.mcast, err = c.node.NewSharedMulticast(staging, c.local[0].peers[0].ctl[ctlMulticast:ctlMulticast+2])
	}
	if err != nil {
		return fmt.Errorf("comm: binding the multicast object: %w", err)
	}
	return nil
}

// regNames names the registered buffers in the order their handles travel.
var regNames = [...]string{regStaging: "staging", regTmp: "tmp", regSignal: "signal", regLamport: "lamport", regCtl: "control", regProto: "LL/LL128", regPush: "push"}

// bellOf is the doorbell of rank p, whose control buffer is ctl as this process maps it.
func (c *Communicator) bellOf(p int, ctl []uint64) bell {
	if c.inProcess {
		d, _ := c.node.Device(c.cfg.Devices[p])
		return bell{dev: d}
	}
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&ctl[ctlBell])), device.SharedBellWords)
	b, _ := device.NewSharedBell(fmt.Sprintf("rank %d", p), words) // aligned and long enough
	spins := c.ranksFitCores()
	if spins {
		b.SpinFirst(sharedSpin, sharedYield)
	}
	return bell{shared: b, spins: spins}
}

// sharedSpin is how long a rank's waiter spins before it yields, where the ranks' threads
// fit on the cores: a peer that runs on its own core answers within a microsecond or two
// (the call's skew), while a sched_yield between polls costs that much itself.
const sharedSpin = 20 * time.Microsecond

// sharedYield is how long a rank's waiter, where the ranks' threads fit on the cores, polls
// yielding its core after its spin before it sleeps: a peer asleep in the futex wakes tens
// of microseconds late on a virtual machine, so a pair of ranks that once slept kept
// sleeping (most 2-rank runs at 1 KiB 9-35 µs a call, against about 1.5 µs where neither
// sleeps), while a yield costs a loaded machine little (docs/benchmarks/processes.md,
// seventh session). A millisecond outlasts a call's skew and a wake-up, and still sleeps
// soon when a peer stays away (between steps, or a stalled rank).
const sharedYield = time.Millisecond

// ranksFitCores reports whether every rank's process, as many threads as this one runs
// Go code on, has cores of its own; else a spinning waiter would hold the core its peer
// needs.
func (c *Communicator) ranksFitCores() bool {
	return c.n*runtime.GOMAXPROCS(0) <= runtime.NumCPU()
}

func (c *Communicator) free() {
	for _, b := range c.mapped {
		_ = c.mem.Close(b)
	}
	c.mapped = nil
	for _, rk := range c.local {
		rk.free()
	}
}

// Close fails the communicator with ErrClosed, so that collectives still in flight (a
// stalled rank's too, a peer process's) stop waiting at once, and frees the registered
// buffers and this process's mappings of its peers'. It never blocks, broken or not; Err
// reports ErrClosed afterwards unless an earlier failure came. Closing again does nothing.
// Across processes the memory is unmapped: synchronize the local rank's streams first,
// whose calls end at once on the failure.
func (c *Communicator) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil
	}
	c.fail(nil, 0, fmt.Errorf("comm: %w", ErrClosed))
	c.closed = true
	c.free()
	return nil
}

// Size returns the number of ranks.
func (c *Communicator) Size() int { return c.n }

// Rank returns rank r's handle, through which that rank issues its collectives; nil for a
// rank that lives in another process (Join).
func (c *Communicator) Rank(r int) *Rank { return c.ranks[r] }

// HasNVLS reports whether the NVLS algorithm is available (the fabric has a switch).
func (c *Communicator) HasNVLS() bool { return c.mcast != nil }

// Multicast returns the multicast object over the ranks' staging buffers that NVLS calls
// reduce through, or nil where HasNVLS is false. Its Counts show which calls went through
// the switch, which their results (one-shot's bits) cannot.
func (c *Communicator) Multicast() *device.Multicast { return c.mcast }

// Recorder returns rank r's flight recorder; nil for a rank in another process.
func (c *Communicator) Recorder(r int) *Recorder {
	if c.ranks[r] == nil {
		return nil
	}
	return &c.ranks[r].rec
}

// Err returns the failure that made the communicator unusable, or nil: this process's, or
// the first that a rank's control buffer holds (a peer process's, which names the rank,
// the call and the cause). A communicator that failed stays failed: its ranks no longer
// agree on their barriers' state, so a process rebuilds it (New) to go on.
func (c *Communicator) Err() error {
	if p := c.failed.Load(); p != nil {
		return *p
	}
	if !c.local[0].anyFailed() {
		return nil
	}
	if err := c.local[0].peerFailure(); err != nil {
		c.failed.CompareAndSwap(nil, &err)
		return *c.failed.Load()
	}
	return nil
}

// fail makes err the communicator's failure unless one came first, sets the failure word
// of rank rk (failed in call seq), or of every rank of this process when rk is nil (no
// call failed: Close), and wakes every rank's waiters so that they see it.
func (c *Communicator) fail(rk *Rank, seq uint64, err error) {
	c.failed.CompareAndSwap(nil, &err)
	code := codeOf(err)
	for _, l := range c.local {
		if rk == nil || l == rk {
			setFailed(l.peers[l.rank].ctl, code, seq) // no call of its own when rk is nil (Close)
		}
	}
	c.ringAll()
}

// ringAll wakes every rank's waiters, so that they see a failure.
func (c *Communicator) ringAll() {
	for p := range c.n {
		c.local[0].ringPeer(p)
	}
}

// MarkExited records in rank p's control buffer that its process ended: what a driver
// does when it learns that a rank process died (a pidfd, a socket's EOF), since a dead rank
// cannot say so itself. Every rank's waits then end at once with an error that names p,
// the call it failed in and its last collective. It wakes every rank's waiters.
func (c *Communicator) MarkExited(p int) error {
	if p < 0 || p >= c.n {
		return fmt.Errorf("comm: mark exited: rank %d, but the communicator has %d ranks", p, c.n)
	}
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed {
		return nil // nothing waits any more
	}
	markExited(c.local[0].peers[p].ctl)
	c.ringAll()
	return nil
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

// errNotAllLocal is the error of what drives every rank from this process (Bench,
// Autotune) on a communicator whose peers live in other processes.
func errNotAllLocal(what string) error {
	return fmt.Errorf("comm: %s drives every rank from one process; this communicator's peers live in other processes (Join)", what)
}
