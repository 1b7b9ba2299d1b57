package comm

import (
	"sync"

	"github.com/tpslice/tpslice/device"
)

// maxFreeCalls bounds a rank's free list: more than a host enqueues ahead of its stream in
// a burst of small calls, at under half a KiB each.
const maxFreeCalls = 64

// chunkKernel is one chunk's kernel of a call. Its Prologue, Block and Epilogue are method
// values bound once, when it is made, to fields the host sets before each launch: a call of
// one chunk (every small call, whose issue is CPU around a microsecond's wait) then takes a
// kernel and its call from the rank's free list and allocates nothing.
type chunkKernel struct {
	cl                   *call // the call the chunk belongs to: &own for a pooled call
	off, n, blocks       int
	first, last, oneShot bool
	body                 func(*call, device.Block, int, int) error
	// pooled says the kernel is its call's only one, launched outside a capture: its
	// epilogue is the last use of both, which then go back to the rank's free list.
	pooled bool
	// hostKeeps says the host launched it with LaunchAndWait: the host, not the epilogue,
	// gives it back (callFreeList.keep) once the wait returned without error.
	hostKeeps bool

	prologue func() error
	block    func(device.Block) error
	epilogue func(error)

	own call // the call's storage when pooled
}

func newChunkKernel() *chunkKernel {
	k := &chunkKernel{}
	k.prologue, k.block, k.epilogue = k.runPrologue, k.runBlock, k.runEpilogue
	return k
}

func (k *chunkKernel) runPrologue() error {
	cl := k.cl
	alternate := k.oneShot && cl.alternates(k.n, k.blocks)
	if k.first {
		// an alternating one-shot of one chunk meets one barrier, its first wait: its
		// record can open there, while its flags travel
		if err := cl.begin(alternate && k.last); err != nil {
			return err
		}
	}
	if err := cl.settle(alternate); err != nil {
		return err
	}
	cl.beginChunk(k.n)
	return nil
}

func (k *chunkKernel) runBlock(b device.Block) error { return k.cl.runBlock(k.body, b, k.off, k.n) }

func (k *chunkKernel) runEpilogue(err error) {
	if err != nil || k.last {
		k.cl.end(err)
	}
	if k.pooled && !k.hostKeeps {
		k.cl.r.calls.put(k)
	}
}

// callFreeList holds a rank's finished one-chunk calls for reuse. The host takes from it
// and the stream's epilogues give back, on different goroutines, hence the lock. A
// blocking call (LaunchAndWait) is different: once its wait returned, its kernel is done
// and the host's alone, so the host keeps it (spare) for its next call with no lock and
// no atomic instruction: the common case of one caller issuing one blocking call after
// another, where the lock's two pairs were some 27 ns of a 435 ns call.
type callFreeList struct {
	spare *chunkKernel // host side: the last blocking call's kernel
	mu    sync.Mutex
	free  []*chunkKernel
}

// take returns the host's spare kernel, else one from the list or a new one; the caller
// overwrites its call. Host side.
func (l *callFreeList) take() *chunkKernel {
	if k := l.spare; k != nil {
		l.spare = nil
		return k
	}
	l.mu.Lock()
	var k *chunkKernel
	if n := len(l.free); n > 0 {
		k, l.free[n-1] = l.free[n-1], nil
		l.free = l.free[:n-1]
	}
	l.mu.Unlock()
	if k == nil {
		return newChunkKernel()
	}
	return k
}

// keep takes back a kernel whose LaunchAndWait returned without error: its epilogue ran
// and nothing else holds it. Host side.
func (l *callFreeList) keep(k *chunkKernel) {
	k.body, k.cl = nil, nil // hold no buffers of the finished call
	l.spare = k
}

// put gives back a kernel whose epilogue was its last use. Kernel side.
func (l *callFreeList) put(k *chunkKernel) {
	k.body, k.cl = nil, nil // hold no buffers of the finished call
	l.mu.Lock()
	if len(l.free) < maxFreeCalls {
		l.free = append(l.free, k)
	}
	l.mu.Unlock()
}

// lastKernelName is the name of a rank's last collective kernel and what it was made of.
type lastKernelName struct {
	op, name string
	ch       Choice
}

// kernelName is a collective kernel's name, "op.choice". The last one is kept: a rank
// repeats one far more often than it switches, and the concatenation allocates.
func (r *Rank) kernelName(op string, ch Choice) string {
	if l := &r.lastName; l.op != op || l.ch != ch || l.name == "" {
		*l = lastKernelName{op: op, name: op + "." + ch.String(), ch: ch}
	}
	return r.lastName.name
}
