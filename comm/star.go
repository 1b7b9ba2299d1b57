package comm

import "github.com/tpslice/tpslice/device"

// starRoot is the rank that reduces in the star all-reduce.
const starRoot = 0

// star is the seed's all-reduce, the baseline the others improve on: every rank copies its
// input into its registered buffer (as one-shot stages); barrier; rank 0 alone reads all n
// inputs and sums them in rank order into its tmp buffer (one-shot's sum, so the same bits);
// barrier; every rank copies rank 0's result into its output. Rank 0 reads (n-1)·S and
// then serves S to each of the n-1 others.
//
// Two barriers suffice, as for two-shot: rank 0 stops reading the staging buffers before
// the second, and it writes its tmp buffer again only after the next call's first barrier,
// which every rank reaches only after its copy.
func (cl *call) star(b device.Block, off, n int) error {
	lo, hi := cl.span(n, b)
	cl.stage(off, lo, hi)
	if err := cl.barrier(b, "star inputs staged"); err != nil {
		return err
	}
	if cl.r.rank == starRoot {
		cl.reduceOwn(off, lo, hi)
	}
	if err := cl.barrier(b, "star root reduced"); err != nil {
		return err
	}
	cl.gather(starRoot, off, lo, hi)
	return nil
}
