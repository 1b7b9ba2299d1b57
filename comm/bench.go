package comm

import (
	"fmt"
	"slices"
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

// MeasureOptions says how long Measure measures.
type MeasureOptions struct {
	// Warmup is how many untimed calls each algorithm makes first.
	Warmup int
	// MinIters and Target: a measurement runs at least MinIters calls and at least Target
	// of wall time, unless MaxTime stops it first (at one call at the least).
	MinIters int
	Target   time.Duration
	MaxTime  time.Duration
	// Rounds interleave the algorithms; each keeps its best round, so a noisy neighbour
	// spoils one measurement rather than a ranking.
	Rounds int
	// Prune, when > 1, drops after calibration every algorithm slower than Prune times
	// the fastest; its one calibration call stands as its time.
	Prune float64
}

// Measure times each of algos on the same buffers and returns each one's best time per
// call. after, when set, runs once per algorithm right after its last measurement (the
// outputs then hold its result), with the algorithm's index.
func (c *Communicator) Measure(streams []*device.Stream, algos []Algo, ins, outs []*device.Buffer, count int, o MeasureOptions, after func(i int) error) ([]time.Duration, error) {
	once := make([]time.Duration, len(algos))
	for i, a := range algos {
		d, err := c.Bench(streams, a, ins, outs, count, o.Warmup, 1)
		if err != nil {
			return nil, err
		}
		once[i] = max(d, time.Nanosecond)
	}
	fastest := slices.Min(once)
	best := slices.Clone(once)
	for round := range max(o.Rounds, 1) {
		for i, a := range algos {
			if o.Prune > 1 && float64(once[i]) > o.Prune*float64(fastest) {
				continue
			}
			iters := max(o.MinIters, int(o.Target/once[i]), 1)
			if o.MaxTime > 0 {
				iters = max(1, min(iters, int(o.MaxTime/once[i])))
			}
			d, err := c.Bench(streams, a, ins, outs, count, 0, iters)
			if err != nil {
				return nil, err
			}
			if round == 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	if after != nil {
		for i, a := range algos { // one more call each, so the outputs hold each one's result
			if _, err := c.Bench(streams, a, ins, outs, count, 0, 1); err != nil {
				return nil, err
			}
			if err := after(i); err != nil {
				return nil, err
			}
		}
	}
	return best, nil
}
