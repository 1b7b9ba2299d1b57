package comm

import (
	"fmt"
	"slices"
	"time"

	"github.com/tpslice/tpslice/device"
)

// Bench times one configuration of collective op the way nccl-tests does: warmup calls,
// then iters calls issued back to back on every rank (each rank's stream runs them while
// the host enqueues the rest), and returns the wall time per call. op is OpAllReduce ("" is
// the same), OpReduceScatter (count elements out per rank, n·count in) or OpAllGather
// (count in, n·count out); ch is the algorithm and, for an all-reduce, its protocol
// (ProtoAuto selects; the other collectives take none). ins and outs hold one buffer per
// rank, on each rank's device; streams one stream per rank. With blocking every call is
// synchronized before the next is issued (nccl-tests' -z 1, MPI_Allreduce's shape).
func (c *Communicator) Bench(streams []*device.Stream, op device.CollectiveOp, ch Choice, ins, outs []*device.Buffer, count, warmup, iters int, blocking bool) (time.Duration, error) {
	issue, err := c.issuer(op, ch.Proto)
	if err != nil {
		return 0, err
	}
	if len(c.local) != c.n {
		return 0, errNotAllLocal("bench")
	}
	if len(streams) != c.n || len(ins) != c.n || len(outs) != c.n {
		return 0, fmt.Errorf("comm: bench needs one stream, input and output per rank (%d), got %d, %d, %d", c.n, len(streams), len(ins), len(outs))
	}
	if iters < 1 {
		return 0, fmt.Errorf("comm: bench needs at least one timed iteration, got %d", iters)
	}
	syncAll := func() error {
		for r, s := range streams {
			if err := s.Synchronize(); err != nil {
				return fmt.Errorf("comm: bench %s %v count %d: rank %d: %w", op, ch, count, r, err)
			}
		}
		return nil
	}
	run := func(k int) error {
		for range k {
			for r, rk := range c.ranks {
				if err := issue(rk, streams[r], ch.Algo, ins[r], outs[r], count); err != nil {
					return err
				}
			}
			if blocking {
				if err := syncAll(); err != nil {
					return err
				}
			}
		}
		return syncAll()
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

// Bench is Communicator.Bench for one rank of a communicator whose ranks live in processes
// of their own (Join): every rank's process calls it with the same arguments, and each
// times its own calls; the slowest rank's time is the call's, as nccl-tests reports it.
// With blocking an all-reduce is AllReduceWait (its kernel runs on this goroutine where
// the stream is idle), any other call its issue and Synchronize.
func (r *Rank) Bench(s *device.Stream, op device.CollectiveOp, ch Choice, in, out *device.Buffer, count, warmup, iters int, blocking bool) (time.Duration, error) {
	issue, err := r.c.issuer(op, ch.Proto)
	if err != nil {
		return 0, err
	}
	if blocking {
		issue = blockingIssuer(op, ch.Proto, issue)
	}
	if iters < 1 {
		return 0, fmt.Errorf("comm: bench needs at least one timed iteration, got %d", iters)
	}
	run := func(k int) error {
		for range k {
			if err := issue(r, s, ch.Algo, in, out, count); err != nil {
				return err
			}
		}
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("comm: bench %s %v count %d: rank %d: %w", op, ch, count, r.rank, err)
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

// blockingIssuer returns issue made blocking: AllReduceWait for an all-reduce, issue then
// Synchronize for the others.
func blockingIssuer(op device.CollectiveOp, proto Proto, issue func(*Rank, *device.Stream, Algo, *device.Buffer, *device.Buffer, int) error) func(*Rank, *device.Stream, Algo, *device.Buffer, *device.Buffer, int) error {
	if op == device.OpAllReduce || op == "" {
		return func(r *Rank, s *device.Stream, a Algo, in, out *device.Buffer, count int) error {
			return r.AllReduceWait(s, a, proto, in, out, count)
		}
	}
	return func(r *Rank, s *device.Stream, a Algo, in, out *device.Buffer, count int) error {
		if err := issue(r, s, a, in, out, count); err != nil {
			return err
		}
		return s.Synchronize()
	}
}

// issuer returns the Rank method that issues op under protocol proto.
func (c *Communicator) issuer(op device.CollectiveOp, proto Proto) (func(*Rank, *device.Stream, Algo, *device.Buffer, *device.Buffer, int) error, error) {
	if proto != ProtoAuto && op != device.OpAllReduce && op != "" {
		return nil, fmt.Errorf("comm: bench: %s takes no protocol, got %v", op, proto)
	}
	switch op {
	case device.OpAllReduce, "":
		return func(r *Rank, s *device.Stream, a Algo, in, out *device.Buffer, count int) error {
			return r.AllReduceProto(s, a, proto, in, out, count)
		}, nil
	case device.OpReduceScatter:
		return (*Rank).ReduceScatterWith, nil
	case device.OpAllGather:
		return (*Rank).AllGatherWith, nil
	}
	return nil, fmt.Errorf("comm: bench: no collective %q (want allreduce, reducescatter or allgather)", op)
}

// MeasureOptions says how long Measure measures. On a node whose ranks time-share few
// cores, a long run drifts between scheduling modes; many short rounds, each algorithm
// keeping its best, rank algorithms far more reproducibly than a few long ones.
type MeasureOptions struct {
	// Op is the collective measured; "" means OpAllReduce.
	Op device.CollectiveOp
	// Warmup is how many untimed calls each algorithm makes first.
	Warmup int
	// MinIters and Target: a round runs at least MinIters calls and at least Target of
	// wall time.
	MinIters int
	Target   time.Duration
	// Rounds is how many rounds interleave the algorithms, at most.
	Rounds int
	// Budget bounds the wall time each algorithm spends per size: it stops taking rounds
	// (and shortens its rounds) once the budget is spent, after one call at the least.
	Budget time.Duration
	// Prune, when > 1, drops after calibration every algorithm slower than Prune times
	// the fastest; its one calibration call stands as its time.
	Prune float64
	// Blocking waits for every call's result before the next is issued, as MPI_Allreduce
	// does (nccl-tests' -z 1); otherwise a round's calls are issued back to back and
	// synchronized once.
	Blocking bool
}

// Measure times each of choices (of collective o.Op) on the same buffers and returns each
// one's best time per call over the rounds. after, when set, runs once per choice right
// after a final call of it (the outputs then hold its result), with the choice's index.
func (c *Communicator) Measure(streams []*device.Stream, choices []Choice, ins, outs []*device.Buffer, count int, o MeasureOptions, after func(i int) error) ([]time.Duration, error) {
	bench := func(i, warmup, iters int) (time.Duration, error) {
		return c.Bench(streams, o.Op, choices[i], ins, outs, count, warmup, iters, o.Blocking)
	}
	return MeasureRounds(len(choices), o, bench, after)
}

// BenchFunc times choice i as Communicator.Bench does: warmup untimed calls, then iters
// timed ones, and returns the time per call.
type BenchFunc func(i, warmup, iters int) (time.Duration, error)

// MeasureRounds is Measure's schedule over choices choices that bench times wherever their
// ranks run (in this process, or in processes of their own that a driver asks): one
// calibration call each, then rounds that interleave them, each keeping its best.
func MeasureRounds(choices int, o MeasureOptions, bench BenchFunc, after func(i int) error) ([]time.Duration, error) {
	once := make([]time.Duration, choices)
	for i := range choices {
		d, err := bench(i, o.Warmup, 1)
		if err != nil {
			return nil, err
		}
		once[i] = max(d, time.Nanosecond)
	}
	fastest := slices.Min(once)
	best := slices.Clone(once)
	spent := slices.Clone(once)
	for round := range max(o.Rounds, 1) {
		for k := range choices {
			// Rotate the order, and warm each choice up with one untimed call, so that
			// no choice always runs in the cache state another one leaves behind.
			i := (k + round) % choices
			if o.Prune > 1 && float64(once[i]) > o.Prune*float64(fastest) {
				continue
			}
			iters := max(o.MinIters, int(o.Target/once[i]), 1)
			if o.Budget > 0 {
				if spent[i] >= o.Budget {
					continue
				}
				iters = max(1, min(iters, int((o.Budget-spent[i])/once[i])))
			}
			start := time.Now()
			d, err := bench(i, 1, iters)
			if err != nil {
				return nil, err
			}
			spent[i] += time.Since(start)
			best[i] = min(best[i], d)
		}
	}
	if after != nil {
		for i := range choices { // one more call each, so the outputs hold each one's result
			if _, err := bench(i, 0, 1); err != nil {
				return nil, err
			}
			if err := after(i); err != nil {
				return nil, err
			}
		}
	}
	return best, nil
}
