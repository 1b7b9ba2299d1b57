package comm

import (
	"cmp"
	"fmt"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// minBlockElems is the smallest share of a message worth its own block: below it the
// extra block's barrier costs more than its parallel reduction saves.
const minBlockElems = 32 << 10

// AllReduce sums count elements of in over all ranks and writes the sum into out (which may
// be in), as a kernel on stream s, with the algorithm the selector picks for the size.
// Every rank gets bitwise the same result. Errors of the running kernel (a peer that never
// arrives, a mismatched call) surface from s.Synchronize.
func (r *Rank) AllReduce(s *device.Stream, in, out *device.Buffer, count int) error {
	return r.AllReduceAlgo(s, Auto, in, out, count)
}

// AllReduceAlgo is AllReduce with an explicit algorithm (Auto selects).
func (r *Rank) AllReduceAlgo(s *device.Stream, algo Algo, in, out *device.Buffer, count int) error {
	return r.AllReduceProto(s, algo, ProtoAuto, in, out, count)
}

// AllReduceProto is AllReduce with an explicit algorithm and protocol (Auto and ProtoAuto
// select). A protocol other than ProtoAuto needs an algorithm that takes one (TakesProto).
func (r *Rank) AllReduceProto(s *device.Stream, algo Algo, proto Proto, in, out *device.Buffer, count int) error {
	return r.allReduce(s, false, algo, proto, in, out, count)
}

// AllReduceWait is AllReduceProto followed by s.Synchronize, a blocking all-reduce as
// MPI_Allreduce, or an NCCL call and cudaStreamSynchronize, is: it returns once the sum is
// in out, with the stream's error if any. Where s is idle the calling goroutine runs the
// call's kernel itself (device.Stream.LaunchAndWait), which saves a small call the hops
// to the stream's goroutine and back. Not for a host that overlaps the all-reduce with
// other work: that one enqueues with AllReduceProto and synchronizes later.
func (r *Rank) AllReduceWait(s *device.Stream, algo Algo, proto Proto, in, out *device.Buffer, count int) error {
	return r.allReduce(s, true, algo, proto, in, out, count)
}

// allReduce is AllReduceProto, and with wait AllReduceWait.
func (r *Rank) allReduce(s *device.Stream, wait bool, algo Algo, proto Proto, in, out *device.Buffer, count int) error {
	if err := r.check("allreduce", s, in, out, count, count); err != nil {
		return err
	}
	if count == 0 {
		if wait {
			return s.Synchronize()
		}
		return nil
	}
	t := in.DType()
	if algo == Auto {
		algo = r.c.pickAlgo(r.c.MessageBytes(count, t))
	}
	spec, known := algo.spec()
	if !r.c.Available(algo) {
		if known && spec.needs == needHosts {
			return fmt.Errorf("comm: rank %d allreduce: algorithm %v: %w", r.rank, algo, r.c.layout.err)
		}
		return fmt.Errorf("comm: rank %d allreduce: algorithm %v is not available on a %v fabric", r.rank, algo, r.c.node.Fabric())
	}
	if r.c.n > 1 && !r.c.cfg.Wire.Supports(algo) {
		return r.errWire("allreduce", algo)
	}
	switch {
	case proto == ProtoAuto:
		proto = r.c.PickProto(algo, count*t.Size())
	case proto > Simple:
		return fmt.Errorf("comm: rank %d allreduce: unknown protocol %v", r.rank, proto)
	case !TakesProto(algo):
		return fmt.Errorf("comm: rank %d allreduce: protocol %v applies to %s, not %v", r.rank, proto, protoAlgoNames(), algo)
	}
	body, chunk := spec.body, spec.chunk(&r.c.cfg, t)
	if proto == Simple {
		proto = ProtoAuto // calls record and compare a protocol only where it is not the default
	}
	return r.launchWire(s, wait, "allreduce", Choice{algo, proto}, r.c.callWire(algo, t), in, out, count, chunk, LocalWork{}, nil, algo == OneShot, body)
}

// check validates a call's arguments on the host, before anything is enqueued.
func (r *Rank) check(op string, s *device.Stream, in, out *device.Buffer, count, outCount int) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("comm: rank %d %s of %d elements: %s", r.rank, op, count, fmt.Sprintf(format, args...))
	}
	switch {
	case s == nil || in == nil || out == nil:
		return fail("nil stream or buffer")
	case s.Device() != r.dev:
		return fail("stream is on %v, the rank is on %v", s.Device(), r.dev)
	case in.Device() != r.dev || in.IsPeer():
		return fail("input %v is not the rank's own memory", in)
	case out.Device() != r.dev || out.IsPeer():
		return fail("output %v is not the rank's own memory", out)
	case in.Freed() || out.Freed():
		return fail("buffer was freed")
	case in.DType() != out.DType():
		return fail("input is %v, output is %v", in.DType(), out.DType())
	case !in.DType().Scalar():
		return fail("%v buffers: collectives move f32, bf16 or f16 elements", in.DType())
	case count < 0:
		return fail("negative count")
	case in.Len() < count:
		return fail("input holds only %d elements", in.Len())
	case out.Len() < outCount:
		return fail("output holds %d elements, needs %d", out.Len(), outCount)
	}
	return nil
}

// launch enqueues one collective call: one kernel per chunk of what the registered buffers
// hold, whose blocks each run body over their share of the chunk. A kernel boundary between
// chunks matters: a rank that reaches a chunk's first barrier has finished every block of
// the chunk before, so blocks never see another block's share of a buffer change under them.
func (r *Rank) launch(s *device.Stream, op string, algo Algo, in, out *device.Buffer, count, chunk int, local LocalWork, grid func(n int) int, body func(*call, device.Block, int, int) error) error {
	return r.launchWire(s, false, op, Choice{Algo: algo}, WireExact, in, out, count, chunk, local, grid, false, body)
}

// launchWire is launch for a call of algorithm and protocol ch whose inputs travel in wire
// format w; oneShot says body is comm's one-shot all-reduce, whose chunks may alternate
// (alternates) and then leave their closing barrier to the next kernel (settle). With
// wait it launches the last chunk's kernel with LaunchAndWait: it returns once the call
// is done, with the stream's error.
func (r *Rank) launchWire(s *device.Stream, wait bool, op string, ch Choice, w Wire, in, out *device.Buffer, count, chunk int, local LocalWork, grid func(n int) int, oneShot bool, body func(*call, device.Block, int, int) error) error {
	algo := ch.Algo
	if grid == nil {
		grid = r.defaultGrid
	}
	if err := r.c.Err(); err != nil {
		return fmt.Errorf("comm: rank %d %s: %w: %v", r.rank, op, ErrFailed, err)
	}
	if len(op) > 8*opWords {
		return fmt.Errorf("comm: rank %d: op name %q is longer than the %d bytes a published descriptor holds", r.rank, op, 8*opWords)
	}
	single := count <= chunk
	var cl *call
	var only *chunkKernel
	if single && !s.Capturing() {
		only = r.calls.take()
		only.pooled, only.hostKeeps, cl = true, wait, &only.own
	} else {
		cl = new(call)
	}
	// field by field: a composite literal is built on the stack and copied, and the copy's
	// wide loads of its narrow stores stall on store forwarding, on every small call
	*cl = call{}
	cl.r, cl.wire, cl.in, cl.out = r, w, in, out
	cl.desc.op, cl.desc.algo, cl.desc.proto, cl.desc.t, cl.desc.count = op, algo, ch.Proto, in.DType(), count
	r.captureInput(s, cl)
	name := r.kernelName(op, ch)
	for off := 0; off < count; off += chunk {
		n, first, last := min(chunk, count-off), off == 0, off+chunk >= count
		k := only
		if k == nil {
			k = newChunkKernel()
		}
		k.cl, k.off, k.n, k.blocks, k.first, k.last, k.oneShot, k.body = cl, off, n, grid(n), first, last, oneShot, body
		kernel := device.Kernel{
			Name:     name,
			Grid:     k.blocks,
			Prologue: k.prologue,
			Block:    k.block,
			Epilogue: k.epilogue,
		}
		r.work(&kernel.Work, op, ch, w.MessageBytes(n, in.DType()), n*local.BytesPerElem, local.Class)
		if wait && last {
			err := s.LaunchAndWait(kernel)
			if only != nil && err == nil { // done: its epilogue ran, so the host may reuse it
				r.calls.keep(only)
			} // else the kernel may still be queued or running: it is left to the collector
			return err
		}
		if err := s.Launch(kernel); err != nil {
			return err // nothing of the call ran: its first kernel was not enqueued, or the
			// stream closed under it, which fails every later call anyway
		}
	}
	return nil
}

// work is what a collective kernel declares: a collective of message bytes with local
// bytes of its own traffic; on one rank there is no exchange, and the kernel is only its
// local work, of class local (elementwise, a copy, when empty).
func (r *Rank) work(w *device.Work, op string, ch Choice, message, local int, class device.WorkClass) {
	w.Bytes = int64(local)
	if r.c.n == 1 {
		w.Class = cmp.Or(class, device.ClassElementwise)
		return
	}
	w.Class, w.Op, w.Algo, w.Message = device.ClassCollective, device.CollectiveOp(op), ch.Algo, int64(message)
	if ch.Proto != ProtoAuto {
		w.Proto = ch.Proto
	}
}

// defaultGrid is the blocks of a chunk of n elements: one per minBlockElems, at most the
// configured grid. It depends only on n and the configuration, so every rank agrees.
func (r *Rank) defaultGrid(n int) int {
	return min(r.c.cfg.Blocks, (n+minBlockElems-1)/minBlockElems)
}

// stage copies input elements [off+lo, off+hi) to the rank's staging buffer at [lo, hi)
// past cl.staged, unless the call reads its peers' inputs in place; on a low-precision wire
// it encodes them.
func (cl *call) stage(off, lo, hi int) {
	if cl.wire != WireExact {
		cl.stageWire(off, lo, hi)
		return
	}
	if cl.registered() {
		cl.r.bytesSaved.Add(int64((hi - lo) * cl.desc.t.Size()))
		return
	}
	own := &cl.r.peers[cl.r.rank]
	cl.copyInput(own.f32, own.u16, cl.staged, off, lo, hi)
}

// copyInput copies input elements [off+lo, off+hi) into dst at [at+lo, at+hi), dst viewed
// as f32 or as 16-bit words by the call's dtype.
func (cl *call) copyInput(dstF32 []float32, dstU16 []uint16, at, off, lo, hi int) {
	if cl.desc.t == dtype.F32 {
		copy(dstF32[at+lo:at+hi], cl.in.Float32s()[off+lo:off+hi])
	} else {
		copy(dstU16[at+lo:at+hi], cl.in.Uint16s()[off+lo:off+hi])
	}
}

// sumInputs sums elements [lo, hi) of the chunk at off over every rank's input — its staged
// copy, or the input itself when registered — in rank order into dst from element at on
// (dst viewed as f32 or 16-bit words, by the call's dtype), rounding 16-bit sums once;
// on a low-precision wire it decodes the staged chunks.
func (cl *call) sumInputs(off, lo, hi, at int, dstF32 []float32, dstU16 []uint16) {
	if cl.wire != WireExact {
		cl.sumWire(lo, hi, at, dstF32, dstU16)
		return
	}
	n := cl.r.c.n
	if cl.desc.t == dtype.F32 {
		var srcs [device.MaxNodeDevices][]float32
		for p := range n {
			srcs[p] = cl.inputF32(p, off, lo, hi)
		}
		vec.SumF32(dstF32[at:at+hi-lo], srcs[:n])
		return
	}
	var srcs [device.MaxNodeDevices][]uint16
	for p := range n {
		srcs[p] = cl.inputU16(p, off, lo, hi)
	}
	vec.Sum16(cl.desc.t, dstU16[at:at+hi-lo], srcs[:n])
}

// inputF32 is rank p's input elements [off+lo, off+hi) as f32: read in place when the call
// is registered, or is this rank's own pushed one and ownInPlace; from region p of this
// rank's push buffer where the ranks pushed, else from p's staging buffer, at [lo, hi)
// past cl.staged.
func (cl *call) inputF32(p, off, lo, hi int) []float32 {
	if cl.registered() {
		return cl.reg.views[p].Float32s()[off+lo : off+hi]
	}
	if cl.pushStride > 0 {
		if p == cl.r.rank && cl.ownInPlace() {
			return cl.in.Float32s()[off+lo : off+hi]
		}
		at := cl.staged + p*cl.pushStride
		return cl.r.peers[cl.r.rank].pushF32[at+lo : at+hi]
	}
	return cl.r.peers[p].f32[cl.staged+lo : cl.staged+hi]
}

// inputU16 is inputF32 for 16-bit elements.
func (cl *call) inputU16(p, off, lo, hi int) []uint16 {
	if cl.registered() {
		return cl.reg.views[p].Uint16s()[off+lo : off+hi]
	}
	if cl.pushStride > 0 {
		if p == cl.r.rank && cl.ownInPlace() {
			return cl.in.Uint16s()[off+lo : off+hi]
		}
		at := cl.staged + p*cl.pushStride
		return cl.r.peers[cl.r.rank].pushU16[at+lo : at+hi]
	}
	return cl.r.peers[p].u16[cl.staged+lo : cl.staged+hi]
}

// outF32 and outU16 view count output elements from element off on.
func (cl *call) outF32(off, count int) []float32 { return cl.out.Float32s()[off : off+count] }
func (cl *call) outU16(off, count int) []uint16  { return cl.out.Uint16s()[off : off+count] }
