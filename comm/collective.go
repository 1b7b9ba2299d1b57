package comm

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/vec"
)

// Collective describes a collective call that a package above comm builds from comm's
// registered buffers and barriers, as the fused all-reduce + residual + RMSNorm does. comm
// runs it like its own calls: one kernel per chunk, sequence numbers, mismatch checks,
// deadlines, the flight recorder.
type Collective struct {
	// Op names the call in records, errors and traces, e.g. "allreduce+rmsnorm".
	Op string
	// Algo is the algorithm the call follows; ranks must agree on it.
	Algo Algo
	// In holds the Count elements this rank contributes; Out receives the result. Both
	// are the rank's own memory of one dtype.
	In, Out *device.Buffer
	// Count is the number of elements of In, OutCount how many Out must hold.
	Count, OutCount int
	// Chunk is the elements each kernel covers, at most ChunkCapacity of the dtype.
	Chunk int
	// Local is the call's own work besides the exchange (a fused norm), for its kernels'
	// Work.
	Local LocalWork
	// Grid gives the blocks of a chunk of n elements; it must depend only on n, so that
	// every rank launches the same grid. Nil means comm's default.
	Grid func(n int) int
	// Block runs block b of the chunk [off, off+n).
	Block func(k *CallCtx, b device.Block, off, n int) error
	// Wire makes the call move its inputs in the communicator's wire format (Config.Wire),
	// for an Algo that runs it: Block then exchanges only through Stage, SumInputs,
	// ReduceOwn and Gather, in spans that start at multiples of WireBlock.
	Wire bool
}

// LocalWork is what a collective does on its own rank besides the exchange: its device-memory
// traffic per element and its class (a fused norm's residual and output: norm). On one
// rank, where nothing is exchanged, it is all the kernel does.
type LocalWork struct {
	BytesPerElem int
	Class        device.WorkClass
}

// CallCtx is a running collective call on one rank, as its blocks see it.
type CallCtx call

// Rank returns the rank running the call, Size the number of ranks.
func (k *CallCtx) Rank() int { return (*call)(k).r.rank }

// Size returns the number of ranks.
func (k *CallCtx) Size() int { return (*call)(k).r.c.n }

// Stage copies input elements [off+lo, off+hi) into the rank's registered staging buffer
// at [lo, hi), where peers can read them after the next barrier.
func (k *CallCtx) Stage(off, lo, hi int) { (*call)(k).stage(off, lo, hi) }

// Barrier waits until block b of every rank has reached the same barrier (vLLM's per-block
// flags), with the communicator's deadline, mismatch checks and error reports.
func (k *CallCtx) Barrier(b device.Block, what string) error { return (*call)(k).barrier(b, what) }

// Staging returns rank p's registered staging buffer as f32, mapped into this rank.
func (k *CallCtx) Staging(p int) []float32 { return (*call)(k).r.peers[p].f32 }

// Input returns rank p's input elements [off+lo, off+hi) as f32, mapped into this rank
// (on the exact wire only):
// its staged copy (Stage put it at [lo, hi) of p's staging buffer), or, in a replayed
// graph whose buffers were registered, p's input itself.
func (k *CallCtx) Input(p, off, lo, hi int) []float32 { return (*call)(k).inputF32(p, off, lo, hi) }

// SumInputs sums every rank's input elements [off+lo, off+hi) in rank order into dst
// (len(dst) = hi-lo, f32), decoding them on a low-precision wire: Input's views, summed
// as vec.SumF32 sums them, on the exact wire.
func (k *CallCtx) SumInputs(dst []float32, off, lo, hi int) {
	(*call)(k).sumInputs(off, lo, hi, 0, dst, nil)
}

// ReduceOwn is two-shot's reduce step: every rank's input elements [off+lo, off+hi) summed
// in rank order into this rank's scratch buffer at [lo, hi), in the wire format (on a
// low-precision wire the sum is encoded again: Gather then returns the wire-rounded sum).
func (k *CallCtx) ReduceOwn(off, lo, hi int) { (*call)(k).reduceOwn(off, lo, hi) }

// Gather is two-shot's gather step: rank p's reduced elements [lo, hi) (ReduceOwn's) into
// Out at off+lo, decoded from the wire format.
func (k *CallCtx) Gather(p, off, lo, hi int) { (*call)(k).gather(p, off, lo, hi) }

// WireBlock is what the spans a block stages and reduces must start at multiples of:
// vec.E4M3Block on the fp8 wire (a scale's block is written by one block alone), else 1.
func (k *CallCtx) WireBlock() int {
	if (*call)(k).wire == WireFP8 {
		return vec.E4M3Block
	}
	return 1
}

// Tmp returns rank p's registered scratch buffer as f32, mapped into this rank (on the
// exact wire; ReduceOwn and Gather use it on any).
func (k *CallCtx) Tmp(p int) []float32 { return (*call)(k).r.peers[p].tmpF32 }

// Tree runs block b's share [lo, hi) of the chunk at off through the tree all-reduce (the
// Tree algorithm's exchange, each element on the tree the plain all-reduce gives it, so the
// sums are bitwise the same), in pieces of whole units of elements. out gets the sums of
// each run of message elements [x, x+len(sum)) as they come down (sum is valid only during
// the call), done (if not nil) each piece [x0, x1) once all of it has. Every rank must pass
// the same lo, hi and unit.
func (k *CallCtx) Tree(b device.Block, off, lo, hi, unit int, out func(x int, sum []float32), done func(x0, x1 int)) error {
	return (*call)(k).treeReduce(b, off, lo, hi, unit, out, done)
}

// Multicast returns the multicast object over every rank's staging buffer, or nil where
// the fabric has no switch.
func (k *CallCtx) Multicast() *device.Multicast { return (*call)(k).r.c.mcast }

// ChunkCapacity is how many elements of size elemBytes each registered buffer holds.
func (c *Communicator) ChunkCapacity(elemBytes int) int { return c.cfg.BufferBytes / elemBytes }

// LaunchCollective enqueues a Collective on stream s.
func (r *Rank) LaunchCollective(s *device.Stream, c Collective) error {
	if err := r.check(c.Op, s, c.In, c.Out, c.Count, c.OutCount); err != nil {
		return err
	}
	if cap := r.c.ChunkCapacity(c.In.DType().Size()); c.Chunk < 1 || c.Chunk > cap {
		return fmt.Errorf("comm: rank %d %s: chunk of %d elements outside 1..%d, what the registered buffers hold", r.rank, c.Op, c.Chunk, cap)
	}
	if c.Count == 0 {
		return nil
	}
	w := WireExact
	if c.Wire {
		if r.c.n > 1 && !r.c.cfg.Wire.Supports(c.Algo) {
			return r.errWire(c.Op, c.Algo)
		}
		w = r.c.callWire(c.Algo, c.In.DType())
	}
	return r.launchWire(s, false, c.Op, Choice{Algo: c.Algo}, w, c.In, c.Out, c.Count, c.Chunk, c.Local, c.Grid, false, func(cl *call, b device.Block, off, n int) error {
		return c.Block((*CallCtx)(cl), b, off, n)
	})
}
