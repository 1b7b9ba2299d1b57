package comm

import (
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// AllGather concatenates every rank's count elements of in, in rank order, into out (which
// must hold n·count): out[p·count + i] = in_p[i]. It runs one-shot style: every rank stages
// its input, barrier, every rank copies all n, barrier before reuse.
func (r *Rank) AllGather(s *device.Stream, in, out *device.Buffer, count int) error {
	if err := r.check("allgather", s, in, out, count, r.c.n*count); err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	return r.launch(s, "allgather", OneShot, in, out, count, r.c.cfg.BufferBytes/in.DType().Size(), 0, nil, (*call).allGather)
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
