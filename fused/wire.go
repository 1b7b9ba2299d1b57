package fused

import (
	"fmt"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/vec"
)

// The communicator's low-precision wire (comm.Config.Wire) runs in the one-shot and
// two-shot variants and in the unfused pair's all-reduce; NVLS, the tree and the
// sequence-parallel variant keep the exact wire and refuse to run beside another. On the fp8 wire a row must be a whole number of
// blocks of scale, so that every block of the kernel encodes whole blocks; where it is
// not, Auto runs unfused (whose plain all-reduce takes any count).

// rowsFitWire reports whether rows of h values can be staged on c's wire by the fused
// variants.
func rowsFitWire(c *comm.Communicator, h int) bool {
	return c.Wire() != comm.WireFP8 || c.Size() == 1 || h%vec.E4M3Block == 0
}

// checkWire rejects a variant that cannot run the communicator's wire for rows of h.
func checkWire(r *comm.Rank, v Variant, h int) error {
	c := r.Communicator()
	switch {
	case c.Wire() == comm.WireExact || c.Size() == 1 || v == Unfused:
		return nil
	case v == NVLS || v == Tree || v == SeqParallel:
		return fmt.Errorf("fused: rank %d: variant %v does not run the %v all-reduce wire; oneshot, twoshot and unfused do", r.Rank(), v, c.Wire())
	case !rowsFitWire(c, h):
		return fmt.Errorf("fused: rank %d: variant %v on the fp8 wire needs hidden a multiple of %d (its blocks of scale), got %d; unfused takes any", r.Rank(), v, vec.E4M3Block, h)
	}
	return nil
}
