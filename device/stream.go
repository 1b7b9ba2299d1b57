package device

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// streamQueueDepth bounds how many operations a host may enqueue ahead of a stream before
// an enqueue blocks, as a GPU's launch queue does.
const streamQueueDepth = 1024

// ErrStreamClosed is returned (wrapped) for work enqueued on a stream whose device closed.
var ErrStreamClosed = errors.New("stream closed")

// Kernel is a grid of blocks. Each block is one call of Block; up to the stream's SM budget
// of them run at once, each on one SM, and they take block indices in ascending order (so
// kernels whose blocks wait on the same block index of peer devices cannot deadlock).
type Kernel struct {
	// Name appears in errors and traces.
	Name string
	// Grid is the number of blocks, at least 1.
	Grid int
	// Detail, when set, describes the launch for traces ("count=4096 f32", sizes, the
	// algorithm); it does not change what runs.
	Detail string
	// Work, when set, says what the kernel costs (its class, bytes, FLOPs), for time
	// breakdowns and performance models; it does not change what runs.
	Work Work
	// Prologue, when set, runs once before any block (what thread 0 of every block would
	// otherwise repeat).
	Prologue func() error
	// Block runs one block. An error aborts the kernel: blocks not yet started are skipped
	// and running ones see Block.Aborted.
	Block func(b Block) error
	// Epilogue, when set, runs once after every block with the kernel's error (nil if it
	// succeeded), also when the kernel is skipped because the stream failed earlier.
	Epilogue func(err error)
}

// Block is one block of a running kernel.
type Block struct {
	// Index is the block's index in the grid, Grid the grid size.
	Index, Grid int
	launch      *launch
}

// Aborted reports whether another block of the kernel failed; waits should stop. A Block
// made outside a launch (a prologue's, before any block runs) is never aborted.
func (b Block) Aborted() bool { return b.launch != nil && b.launch.aborted.Load() }

// launch is the kernel a stream is running. A stream keeps one and reuses it for every
// kernel: a step runs hundreds of kernels a rank, and allocating a launch for each took a
// sixth of the CPU of a TP 8 step of the tiny preset. Only the SMs that run the kernel's
// blocks touch its fields, and the stream rewrites them only after all of those are done.
type launch struct {
	aborted atomic.Bool
	next    uint64      // the next block to run: sync/atomic's add and load, reset with StoreRelease64
	failed  atomic.Bool // the first failing block claims err
	err     error

	// kernel is the copy of what runs that the stream's SM helpers read; a kernel on one
	// SM runs from its caller's copy, which spares a small launch copying the kernel in
	// and clearing it out again.
	kernel Kernel
	left   atomic.Int32 // helpers still running blocks
}

// start readies l for a kernel.
func (l *launch) start() {
	// Flags are cleared only where set: an atomic store is a locked instruction, and the
	// last kernel rarely failed.
	if l.aborted.Load() {
		l.aborted.Store(false)
	}
	StoreRelease64(&l.next, 0) // no locked store: the SMs that read it start after this
	if l.failed.Load() {
		l.failed.Store(false)
	}
	l.err = nil
}

type opKind uint8

const (
	opKernel opKind = iota
	opRecord
	opWait
	opHost
	opSync
	opSequence
)

type op struct {
	kind   opKind
	kernel Kernel
	seq    []Kernel
	event  *Event
	gen    uint64
	host   func()
	ack    chan struct{}
}

// Stream runs kernels, event records, event waits and host functions in the order they were
// enqueued, asynchronously to the host. The first kernel error is sticky, as in CUDA: later
// kernels on the stream are skipped and Synchronize returns the error.
type Stream struct {
	dev    *Device
	name   string
	budget int

	// mu guards closed against concurrent enqueues; closed is atomic as well because a
	// host-executed launch reads it without mu (runOnHost).
	mu     sync.RWMutex
	closed atomic.Bool
	ops    chan op
	exited chan struct{}
	help   smHelpers
	cur    launch // the kernel running; see launch

	// err is the sticky error, set once: every kernel reads it before it runs, so it is
	// one atomic load rather than a lock.
	err atomic.Pointer[error]

	// The host-executed launch (LaunchAndWait): pending counts the operations enqueued
	// and not yet finished; onHost is set while a host goroutine runs a kernel of the
	// stream, which the stream's goroutine waits out (hostDone) before its next operation;
	// hostLaunches counts the kernels that ran so.
	pending      atomic.Int64
	onHost       atomic.Bool
	hostDone     doorbell
	hostLaunches uint64 // written by the host that holds onHost (StoreRelease64), read with sync/atomic

	// Capture state, guarded by the node's capMu; capturing mirrors cap != nil so that
	// launches outside capture take no lock.
	capturing atomic.Bool
	cap       *capture
	frontier  []int // the stream's last captured nodes
}

// newStream starts a stream's goroutine and its helpers, its SM workers, each pinned to the
// device's CPUs where it has some; an error says which could not be pinned, and the stream
// is stopped.
func newStream(d *Device, name string, budget int) (*Stream, error) {
	s := &Stream{dev: d, name: name, budget: budget, ops: make(chan op, streamQueueDepth), exited: make(chan struct{})}
	s.hostDone.init()
	pinned := make(chan error, budget)
	s.startHelpers(budget-1, pinned)
	go s.loop(pinned)
	if err := awaitPinned(budget, pinned); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// Device returns the stream's device.
func (s *Stream) Device() *Device { return s.dev }

// Name returns the stream's name.
func (s *Stream) Name() string { return s.name }

// SMBudget returns how many SMs one kernel on this stream may occupy at once.
func (s *Stream) SMBudget() int { return s.budget }

// String names the stream as errors print it.
func (s *Stream) String() string { return fmt.Sprintf("%v stream %q", s.dev, s.name) }

// Launch enqueues a kernel.
func (s *Stream) Launch(k Kernel) error {
	if err := s.checkKernel(&k); err != nil {
		return err
	}
	if captured, err := s.captureKernel(k); captured || err != nil {
		return err
	}
	return s.enqueue(op{kind: opKernel, kernel: k})
}

// checkKernel returns an error for a kernel that cannot be launched.
func (s *Stream) checkKernel(k *Kernel) error {
	if k.Grid < 1 {
		return fmt.Errorf("%v: launch %q: grid must be at least 1, got %d", s, k.Name, k.Grid)
	}
	if k.Block == nil {
		return fmt.Errorf("%v: launch %q: kernel has no Block function", s, k.Name)
	}
	return nil
}

// LaunchSequence enqueues kernels that run back to back as one stream operation, with no
// host round trip between them: how a replayed graph segment runs. Under capture each
// kernel becomes a node.
func (s *Stream) LaunchSequence(ks []Kernel) error {
	for _, k := range ks {
		if k.Grid < 1 || k.Block == nil {
			return fmt.Errorf("%v: launch sequence: kernel %q needs a grid of at least 1 and a Block function", s, k.Name)
		}
	}
	if s.capturing.Load() {
		for _, k := range ks {
			if err := s.Launch(k); err != nil {
				return err
			}
		}
		return nil
	}
	return s.enqueue(op{kind: opSequence, seq: ks})
}

// HostFunc enqueues fn to run on the host in stream order (cudaLaunchHostFunc); under
// capture it becomes a one-block kernel node.
func (s *Stream) HostFunc(fn func()) error {
	if captured, err := s.captureKernel(Kernel{Name: "host", Grid: 1, Block: func(Block) error { fn(); return nil }}); captured || err != nil {
		return err
	}
	return s.enqueue(op{kind: opHost, host: fn})
}

// Synchronize waits until all work enqueued so far has finished and returns the stream's
// sticky error, if any.
func (s *Stream) Synchronize() error {
	if err := s.captureIllegal("synchronize (the host cannot wait for work being captured)"); err != nil {
		return err
	}
	ack := make(chan struct{})
	if err := s.enqueue(op{kind: opSync, ack: ack}); err != nil {
		return err
	}
	<-ack
	return s.Err()
}

// Err returns the stream's sticky error without waiting.
func (s *Stream) Err() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Stream) setErr(err error) {
	s.err.CompareAndSwap(nil, &err)
}

func (s *Stream) enqueue(o op) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return fmt.Errorf("%v: %w", s, ErrStreamClosed)
	}
	s.pending.Add(1)
	s.ops <- o
	return nil
}

func (s *Stream) stop() {
	s.mu.Lock()
	first := !s.closed.Load()
	s.closed.Store(true) // no enqueue sends on ops after this
	s.mu.Unlock()
	if first {
		// a host-executed launch that began before closed was set finishes first, as
		// queued work does: it may run blocks on the helpers, which the loop stops
		s.awaitHostRun()
		close(s.ops)
	}
	<-s.exited
}

func (s *Stream) loop(pinned chan<- error) {
	pinned <- s.pinWorker()
	defer close(s.exited)
	defer s.stopHelpers()
	for o := range s.ops {
		s.awaitHostRun()
		switch o.kind {
		case opKernel:
			s.execute(&o.kernel)
		case opSequence:
			for i := range o.seq {
				s.execute(&o.seq[i])
			}
		case opRecord:
			o.event.complete(o.gen)
		case opWait:
			o.event.wait(o.gen)
		case opHost:
			o.host()
		case opSync:
			// Counted done before the host wakes, so that a LaunchAndWait right after
			// Synchronize finds the stream idle.
			s.pending.Add(-1)
			close(o.ack)
			continue
		}
		s.pending.Add(-1)
	}
}

// execute runs one kernel unless the stream failed earlier, then its epilogue. Kernels
// pass by pointer on their way to the launch, which holds the one copy that its SMs read.
func (s *Stream) execute(k *Kernel) {
	kt := s.traceKernel()
	err := s.Err()
	skipped := err != nil
	if err == nil {
		if err = s.run(k); err != nil {
			s.setErr(err)
		}
	} else {
		err = fmt.Errorf("%v: kernel %s skipped after an earlier failure: %w", s, k.Name, err)
	}
	kt.done(s, k, err, skipped)
	if k.Epilogue != nil {
		k.Epilogue(err)
	}
}

// run executes a kernel's blocks on up to budget SMs and returns the first block error.
func (s *Stream) run(k *Kernel) (err error) {
	if k.Prologue != nil {
		if err := protect(k.Prologue); err != nil {
			return fmt.Errorf("%v: kernel %s prologue: %w", s, k.Name, err)
		}
	}
	l := &s.cur
	l.start()
	if helpers := min(k.Grid, s.budget) - 1; helpers == 0 {
		s.runAlone(l, k)
	} else {
		s.runOnHelpers(l, k, helpers)
	}
	return l.err
}

// share occupies one SM and runs blocks until the grid is done or the kernel aborted. No
// defer gives the SM back: a block's panic is recovered in runBlock.
func (s *Stream) share(l *launch, k *Kernel) {
	s.dev.sms.acquire()
	for !l.aborted.Load() {
		// The load first spares the last block's SM a locked add that only finds the grid
		// done; the add still decides, as another SM may take the last block in between.
		if int(atomic.LoadUint64(&l.next)) >= k.Grid {
			break
		}
		i := int(atomic.AddUint64(&l.next, 1) - 1)
		if i >= k.Grid || !s.runBlock(l, k, i) {
			break
		}
	}
	s.dev.sms.release()
}

// runAlone runs every block of k on one SM, the only one the kernel has (no SM helpers):
// it takes the blocks in order without share's counter, a locked add a block.
func (s *Stream) runAlone(l *launch, k *Kernel) {
	s.dev.sms.acquire()
	for i := 0; i < k.Grid && !l.aborted.Load() && s.runBlock(l, k, i); i++ {
	}
	s.dev.sms.release()
}

// runBlock runs block i of k and reports whether it succeeded; a block that fails or
// panics claims the launch's error, unless another did first, and aborts the kernel.
func (s *Stream) runBlock(l *launch, k *Kernel, i int) bool {
	err := protect(func() error { return k.Block(Block{Index: i, Grid: k.Grid, launch: l}) })
	if err == nil {
		return true
	}
	if l.failed.CompareAndSwap(false, true) {
		l.err = fmt.Errorf("%v: kernel %s block %d/%d: %w", s, k.Name, i, k.Grid, err)
	}
	l.aborted.Store(true)
	s.dev.Ring() // wake sibling blocks blocked in WaitUntil
	return false
}

// protect turns a panic inside kernel code into an error, so a bad kernel fails its stream
// instead of the process.
func protect(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}
