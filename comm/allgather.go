package comm

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// AllGather concatenates every rank's count elements of in, in rank order, into out (which
// must hold n·count): out[p·count + i] = in_p[i], with the algorithm AllGatherAlgo gives
// the fabric.
func (r *Rank) AllGather(s *device.Stream, in, out *device.Buffer, count int) error {
	return r.AllGatherWith(s, Auto, in, out, count)
}

// AllGatherWith is AllGather with an explicit algorithm (Auto picks): OneShot, the direct
// all-gather — every rank stages its input, barrier, every rank copies all n, barrier
// before reuse — or Ring, n-1 steps that each copy one slice from the left neighbour.
func (r *Rank) AllGatherWith(s *device.Stream, algo Algo, in, out *device.Buffer, count int) error {
	if err := r.check("allgather", s, in, out, count, r.c.n*count); err != nil {
		return err
	}
	algo, err := r.scatterGatherAlgo("allgather", algo)
	if err != nil || count == 0 {
		return err
	}
	chunk := r.c.cfg.BufferBytes / in.DType().Size()
	if algo == Ring {
		// The ring keeps all n slices of a chunk in each rank's registered buffer.
		return r.launch(s, "allgather", Ring, in, out, count, chunk/r.c.n, LocalWork{}, nil, (*call).ringAllGather)
	}
	return r.launch(s, "allgather", OneShot, in, out, count, chunk, LocalWork{}, nil, (*call).allGather)
}

// AllGatherAlgo is the algorithm an Auto AllGather runs: direct (OneShot), except on a PCIe
// node of more than two GPUs, where every rank reading every peer would cross the root
// complex n-1 times at once; there the ring (vLLM's rule, as for all-reduce).
func (c *Communicator) AllGatherAlgo() Algo { return ScatterGatherRule(c.Fabric(), c.n) }

// ScatterGatherRule is the algorithm of an Auto all-gather or reduce-scatter of n ranks on
// fabric f: the ring on PCIe beyond two GPUs, direct (OneShot) otherwise.
func ScatterGatherRule(f device.Fabric, n int) Algo {
	if f == device.PCIe && n > 2 {
		return Ring
	}
	return OneShot
}

func (cl *call) allGather(b device.Block, off, n int) error {
	lo, hi := blockSpan(n, b)
	cl.stage(off, lo, hi)
	if err := cl.barrier(b, "all-gather inputs staged"); err != nil {
		return err
	}
	for p := range cl.r.c.n {
		at := p*cl.desc.count + off + lo
		if cl.desc.t == dtype.F32 {
			copy(cl.outF32(at, hi-lo), cl.inputF32(p, off, lo, hi))
		} else {
			copy(cl.outU16(at, hi-lo), cl.inputU16(p, off, lo, hi))
		}
	}
	return cl.barrier(b, "all-gather inputs read")
}

// ringAllGather passes slices around the ring: every rank's registered buffer holds n slots
// of the chunk, slot p for rank p's slice. A rank puts its own slice in its slot, then at
// step s copies slot (rank-s-1) from its left neighbour, which got it the step before;
// after n-1 steps every buffer holds every slot. Each rank reads one peer per step.
func (cl *call) ringAllGather(b device.Block, off, n int) error {
	r := cl.r
	own, left := &r.peers[r.rank], &r.peers[(r.rank+r.c.n-1)%r.c.n]
	if cl.desc.t == dtype.F32 {
		return ringGather(cl, b, own.f32, left.f32, cl.in.Float32s(), cl.outF32, off, n)
	}
	return ringGather(cl, b, own.u16, left.u16, cl.in.Uint16s(), cl.outU16, off, n)
}

func ringGather[T float32 | uint16](cl *call, b device.Block, own, left, in []T, out func(at, n int) []T, off, n int) error {
	rank, ranks := cl.r.rank, cl.r.c.n
	lo, hi := blockSpan(n, b)
	slot := func(buf []T, p int) []T { return buf[p*n+lo : p*n+hi] }
	copy(slot(own, rank), in[off+lo:off+hi])
	for s := range ranks {
		// The barrier before a step publishes the slot the step reads; the last one lets
		// the left neighbour's reader (this rank) and the right neighbour finish with this
		// chunk before the next one overwrites the slots.
		if err := cl.barrier(b, fmt.Sprintf("ring all-gather step %d", s)); err != nil {
			return err
		}
		if s < ranks-1 {
			p := (rank - s - 1 + ranks) % ranks
			copy(slot(own, p), slot(left, p))
		}
	}
	for p := range ranks {
		copy(out(p*cl.desc.count+off+lo, hi-lo), slot(own, p))
	}
	return nil
}
