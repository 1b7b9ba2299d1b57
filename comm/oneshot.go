package comm

import "github.com/tpslice/tpslice/device"

// oneShot: every rank copies its input into its registered buffer; barrier; every rank
// reads all n inputs and sums them in rank order (so every rank gets the same bits);
// barrier, before the buffer can be reused. Each rank reads (n-1)·S; two barriers.
func (cl *call) oneShot(b device.Block, off, n int) error {
	lo, hi := cl.span(n, b)
	cl.stage(off, lo, hi)
	if err := cl.barrier(b, "one-shot inputs staged"); err != nil {
		return err
	}
	cl.sumInputs(off, lo, hi, off+lo, cl.out.Float32s(), cl.out.Uint16s())
	return cl.barrier(b, "one-shot inputs read")
}
