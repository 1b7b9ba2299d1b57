package comm

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// ReduceScatter sums slice r of every rank's input into rank r's output: in holds n·count
// elements, out count, and
//
//	out_r[i] = Σ_p in_p[r·count + i]
//
// with the algorithm ReduceScatterAlgo gives the fabric. 16-bit inputs are summed in f32
// and rounded once, as the all-reduces do. The order of the sum is fixed by the algorithm
// (see ReduceScatterWith), so repeated calls give the same bits.
func (r *Rank) ReduceScatter(s *device.Stream, in, out *device.Buffer, count int) error {
	return r.ReduceScatterWith(s, Auto, in, out, count)
}

// ReduceScatterWith is ReduceScatter with an explicit algorithm (Auto picks):
//
//   - OneShot, the direct reduce-scatter: every rank stages its input, barrier, rank r reads
//     slice r of every peer and sums them in rank order (in_0 + in_1 + … + in_{n-1}, the
//     one-shot and two-shot all-reduces' order, so the bits are theirs), barrier before the
//     staging buffer is reused. Each rank reads (n-1)/n·S of an input of S bytes.
//   - Ring: n-1 steps around the ring 0 → 1 → … → n-1 → 0, each adding the left
//     neighbour's partial sum of one slice to one's own, in f32. Slice r starts at rank
//     r+1 and ends at rank r, so it sums in ring order from r+1:
//     ((in_{r+1} + in_{r+2}) + …) + in_r, indices mod n. Each rank reads (n-1)/n·S too,
//     one neighbour per step, and waits n times.
//
// Every rank must pass the same algorithm (Auto resolves the same on every rank).
func (r *Rank) ReduceScatterWith(s *device.Stream, algo Algo, in, out *device.Buffer, count int) error {
	const op = "reducescatter"
	if err := r.check(op, s, in, out, count, count); err != nil {
		return err
	}
	if in.Len() < r.c.n*count {
		return fmt.Errorf("comm: rank %d %s of %d elements: input holds %d elements, needs n·count = %d", r.rank, op, count, in.Len(), r.c.n*count)
	}
	algo, err := r.scatterGatherAlgo(op, algo)
	if err != nil || count == 0 {
		return err
	}
	if algo == Ring { // n slots of f32 partial sums
		return r.launch(s, op, Ring, in, out, count, r.c.cfg.BufferBytes/4/r.c.n, LocalWork{}, nil, (*call).ringReduceScatter)
	}
	chunk := r.c.cfg.BufferBytes / in.DType().Size() / r.c.n // n staged slots
	return r.launch(s, op, OneShot, in, out, count, chunk, LocalWork{}, nil, (*call).reduceScatter)
}

// ReduceScatterAlgo is the algorithm an Auto ReduceScatter runs: AllGather's rule (the
// ring on a PCIe node of more than two GPUs, direct otherwise), for the same reason.
func (c *Communicator) ReduceScatterAlgo() Algo { return c.AllGatherAlgo() }

// scatterGatherAlgo resolves the algorithm of a reduce-scatter or all-gather: Auto takes
// the fabric's rule; only OneShot (direct) and Ring exist for these collectives.
func (r *Rank) scatterGatherAlgo(op string, algo Algo) (Algo, error) {
	switch algo {
	case Auto:
		return r.c.AllGatherAlgo(), nil
	case OneShot, Ring:
		return algo, nil
	}
	return 0, fmt.Errorf("comm: rank %d %s: algorithm %v does not exist for it (want auto, oneshot for direct, or ring)", r.rank, op, algo)
}

// reduceScatter is the direct reduce-scatter of one chunk: n slots of the chunk's n
// elements, slot q for slice q, staged (or read in place when registered); rank r sums
// its slot on every rank in rank order into its output.
func (cl *call) reduceScatter(b device.Block, off, n int) error {
	r, ranks := cl.r, cl.r.c.n
	lo, hi := blockSpan(n, b)
	for q := range ranks {
		cl.stageSlot(q, off, n, lo, hi)
	}
	if err := cl.barrier(b, "reduce-scatter inputs staged"); err != nil {
		return err
	}
	if cl.desc.t == dtype.F32 {
		var srcs [device.MaxNodeDevices][]float32
		for p := range ranks {
			srcs[p] = cl.slotF32(p, r.rank, off, n, lo, hi)
		}
		vec.SumF32(cl.outF32(off+lo, hi-lo), srcs[:ranks])
	} else {
		var srcs [device.MaxNodeDevices][]uint16
		for p := range ranks {
			srcs[p] = cl.slotU16(p, r.rank, off, n, lo, hi)
		}
		vec.Sum16(cl.desc.t, cl.outU16(off+lo, hi-lo), srcs[:ranks])
	}
	return cl.barrier(b, "reduce-scatter inputs read")
}

// stageSlot copies input elements [off+lo, off+hi) of slice q into slot q of the rank's
// staging buffer (a chunk of n elements per slot), unless peers read the input in place.
func (cl *call) stageSlot(q, off, n, lo, hi int) {
	if cl.registered() {
		cl.r.bytesSaved.Add(int64((hi - lo) * cl.desc.t.Size()))
		return
	}
	own, from := &cl.r.peers[cl.r.rank], q*cl.desc.count+off
	if cl.desc.t == dtype.F32 {
		copy(own.f32[q*n+lo:q*n+hi], cl.in.Float32s()[from+lo:from+hi])
	} else {
		copy(own.u16[q*n+lo:q*n+hi], cl.in.Uint16s()[from+lo:from+hi])
	}
}

// slotF32 is rank p's elements [lo, hi) of slot q of the chunk at off: staged, or its
// input itself when registered.
func (cl *call) slotF32(p, q, off, n, lo, hi int) []float32 {
	if cl.registered() {
		from := q*cl.desc.count + off
		return cl.reg.views[p].Float32s()[from+lo : from+hi]
	}
	return cl.r.peers[p].f32[q*n+lo : q*n+hi]
}

// slotU16 is slotF32 for 16-bit elements.
func (cl *call) slotU16(p, q, off, n, lo, hi int) []uint16 {
	if cl.registered() {
		from := q*cl.desc.count + off
		return cl.reg.views[p].Uint16s()[from+lo : from+hi]
	}
	return cl.r.peers[p].u16[q*n+lo : q*n+hi]
}

// ringReduceScatter runs the ring on one chunk in the staging buffer, which holds n f32
// slots of the chunk's n elements (16-bit inputs widened, so partial sums never round
// before the end). Step s: rank r adds slot (r-s-2) mod n of its left neighbour into its
// own, which the neighbour finished the step before; after n-1 steps slot r holds the sum.
// A barrier follows every step: it publishes the slot the next step reads, and the last
// one lets the right neighbour finish reading before the next chunk overwrites the slots.
func (cl *call) ringReduceScatter(b device.Block, off, n int) error {
	r, ranks := cl.r, cl.r.c.n
	own, left := r.peers[r.rank].f32, r.peers[(r.rank+ranks-1)%ranks].f32
	lo, hi := blockSpan(n, b)
	slot := func(buf []float32, q int) []float32 { return buf[q*n+lo : q*n+hi] }
	for q := range ranks {
		from := q*cl.desc.count + off
		if cl.desc.t == dtype.F32 {
			copy(slot(own, q), cl.in.Float32s()[from+lo:from+hi])
		} else {
			vec.Widen(cl.desc.t, slot(own, q), cl.in.Uint16s()[from+lo:from+hi])
		}
	}
	if err := cl.barrier(b, "ring reduce-scatter inputs staged"); err != nil {
		return err
	}
	for s := range ranks - 1 {
		q := (r.rank - s - 2 + 2*ranks) % ranks
		vec.AddF32(slot(own, q), slot(left, q))
		if err := cl.barrier(b, fmt.Sprintf("ring reduce-scatter step %d", s)); err != nil {
			return err
		}
	}
	// No peer reads slot r: the right neighbour reads slots r-1 … r-n+1.
	if cl.desc.t == dtype.F32 {
		copy(cl.outF32(off+lo, hi-lo), slot(own, r.rank))
	} else {
		vec.Narrow(cl.desc.t, cl.outU16(off+lo, hi-lo), slot(own, r.rank))
	}
	return nil
}
