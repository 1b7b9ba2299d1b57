package comm

import "github.com/tpslice/tpslice/device"

// twoShot: reduce-scatter, then all-gather, through the registered buffers. The chunk is
// cut into n slices; rank r sums slice r of every rank's staged input (in rank order) into
// its own tmp buffer; barrier; every rank copies each slice p from rank p's tmp buffer.
// Each rank reads 2(n-1)/n·S. On a low-precision wire the tmp buffers hold the reduced
// slices encoded again (wirecall.go).
//
// Two barriers suffice: peers stop reading a rank's staging buffer before the second, and
// nobody writes a tmp buffer again before the next call's first barrier, which every rank
// reaches only after its gather.
func (cl *call) twoShot(b device.Block, off, count int) error {
	r, n := cl.r, cl.r.c.n
	for p := range n { // stage this block's share of every slice
		lo, hi := cl.sliceSpan(count, p, b)
		cl.stage(off, lo, hi)
	}
	if err := cl.barrier(b, "two-shot inputs staged"); err != nil {
		return err
	}
	lo, hi := cl.sliceSpan(count, r.rank, b)
	cl.reduceOwn(off, lo, hi)
	if err := cl.barrier(b, "two-shot slices reduced"); err != nil {
		return err
	}
	for p := range n {
		lo, hi := cl.sliceSpan(count, p, b)
		cl.gather(p, off, lo, hi)
	}
	return nil
}

// sliceSpan is block b's share [lo, hi) of rank p's slice of a chunk of count elements,
// both splits in whole granules of the call.
func (cl *call) sliceSpan(count, p int, b device.Block) (lo, hi int) {
	n, g := cl.r.c.n, cl.granule()
	s0, s1 := splitAligned(count, n, p, g), splitAligned(count, n, p+1, g)
	lo, hi = cl.span(s1-s0, b)
	return s0 + lo, s0 + hi
}
