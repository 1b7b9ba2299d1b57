package comm

import (
	"fmt"
	"time"

	"github.com/tpslice/tpslice/device"
)

// Bench times one all-reduce configuration the way nccl-tests does: warmup calls, then
// iters calls issued back to back on every rank (each rank's stream runs them while the
// host enqueues the rest), and returns the wall time per call. ins and outs hold one buffer
// per rank, on each rank's device; streams one stream per rank.
func (c *Communicator) Bench(streams []*device.Stream, algo Algo, ins, outs []*device.Buffer, count, warmup, iters int) (time.Duration, error) {
	if len(streams) != c.n || len(ins) != c.n || len(outs) != c.n {
		return 0, fmt.Errorf("comm: bench needs one stream, input and output per rank (%d), got %d, %d, %d", c.n, len(streams), len(ins), len(outs))
	}
	if iters < 1 {
		return 0, fmt.Errorf("comm: bench needs at least one timed iteration, got %d", iters)
	}
	run := func(k int) error {
		for range k {
			for r, rk := range c.ranks {
				if err := rk.AllReduceAlgo(streams[r], algo, ins[r], outs[r], count); err != nil {
					return err
				}
			}
		}
		for r, s := range streams {
			if err := s.Synchronize(); err != nil {
				return fmt.Errorf("comm: bench %v count %d: rank %d: %w", algo, count, r, err)
			}
		}
		return nil
	}
	if err := run(warmup); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := run(iters); err != nil {
		return 0, err
	}
	return time.Since(start) / time.Duration(iters), nil
}
