package comm

import (
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// nvlsTile is how many elements one multimem load-reduce / store pair moves.
const nvlsTile = 512

// nvls reduces on the switch: every rank stages its input in its buffer, which the
// multicast object binds; barrier; rank r load-reduces slice r over all ranks (the switch
// sums, accumulating in f32, in rank order) and multicast-stores the sum into slice r of
// every rank's buffer; barrier; every rank copies the whole reduced chunk out of its own
// buffer. Each rank moves about S and no SM sums n inputs. Here the multicast object is
// emulated by the device runtime, so the reduction still costs this CPU.
//
// Two barriers suffice: after the second, a rank reads only its own buffer, and no peer
// touches it again before the next call's first barrier.
func (cl *call) nvls(b device.Block, off, count int) error {
	r, n, mc := cl.r, cl.r.c.n, cl.r.c.mcast
	var sum [nvlsTile]float32
	for p := range n {
		lo, hi := cl.sliceSpan(count, p, b)
		cl.stage(off, lo, hi)
	}
	if err := cl.barrier(b, "nvls inputs staged"); err != nil {
		return err
	}
	lo, hi := cl.sliceSpan(count, r.rank, b)
	for x := lo; x < hi; x += nvlsTile {
		s := sum[:min(nvlsTile, hi-x)]
		if err := mc.LoadReduce(cl.desc.t, s, x); err != nil {
			return err
		}
		if err := mc.Store(cl.desc.t, x, s); err != nil {
			return err
		}
	}
	if err := cl.barrier(b, "nvls slices reduced"); err != nil {
		return err
	}
	own := &r.peers[r.rank]
	for p := range n {
		lo, hi := cl.sliceSpan(count, p, b)
		if cl.desc.t == dtype.F32 {
			copy(cl.outF32(off+lo, hi-lo), own.f32[lo:hi])
		} else {
			copy(cl.outU16(off+lo, hi-lo), own.u16[lo:hi])
		}
	}
	return nil
}
