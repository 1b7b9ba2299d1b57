package perf

import (
	"fmt"
	"math"
	"time"

	"github.com/tpslice/tpslice/comm"
)

// The α-β cost model of the all-reduce family (DESIGN.md, "The α-β model"), each
// algorithm's shape given by its row of comm's registry (comm.Algo.Cost). S is the
// message size in bytes per rank, n the number of ranks, α the per-step cost (sync plus
// launch) and β the per-GPU link bandwidth in bytes per second, per direction:
//
//	ring      2(n-1)α + 2(n-1)/n · S/β
//	tree      2·d·α + 2·S/β,  d = ⌊log2 n⌋
//	one-shot  2α + (n-1)·S/β
//	two-shot  4α + 2(n-1)/n · S/β
//	NVLS      2α + S/β
//
// The tree's terms follow NCCL's tuning model (src/graph/tuning.cc, ncclTopoTuneModel):
// its tree all-reduce latency is 2·((nRanks/nNodes-1)·intraLat + log2(nNodes)·interLat),
// one hop per tree level up and again down (inside a node NCCL's trees are chains; ours are
// binary trees over the node's ranks, depth d, buildDoubleTree), and its algorithm bandwidth
// is half the bus bandwidth for every algorithm but the ring, so S bytes cost 2·S/β: each
// tree carries S/2, and an inner rank receives its two children's halves and forwards one.
// Pipelining the slices is what lets the two terms add instead of multiply.
// Under this model the tree never beats the best of one-shot and two-shot on one node (at
// n = 3 it ties one-shot); NCCL picks it across nodes, where log2(nNodes) beats a ring's
// 2(nNodes-1) network hops.
//
// Lamport (flag-free one-shot) is priced exactly like one-shot: it moves the same bytes, and
// what it saves (the trailing barrier) is below this model's resolution. One rank (n = 1)
// costs 0: there is nothing to communicate.

// ModelTime returns the α-β model's time for one all-reduce of bytes per rank over n ranks
// with algorithm a. It fails, naming the argument, for Auto or an unknown algorithm (the
// model prices concrete algorithms only), n < 1, bytes < 0, alpha < 0, or a beta that is
// not a finite positive number.
func ModelTime(a comm.Algo, n int, bytes int64, alpha time.Duration, beta float64) (time.Duration, error) {
	if err := checkModelArgs(n, bytes, alpha, beta); err != nil {
		return 0, fmt.Errorf("perf: α-β model for %v: %w", a, err)
	}
	secs, ok := modelSeconds(a, n, float64(bytes), alpha.Seconds(), beta)
	if !ok {
		return 0, fmt.Errorf("perf: α-β model has no time for algorithm %v (want %s)", a, comm.AlgoNames(priced))
	}
	return durationOf(secs), nil
}

// AllGatherTime returns the α-β model's time for an all-gather of bytes per rank over n
// ranks: one-shot (direct) 2α + (n-1)·S/β (stage, barrier, read every peer, barrier), ring
// (n-1)·(α + S/β) (one slice from the left neighbour per step). Other algorithms fail.
// A reduce-scatter is its mirror image and costs the same, with bytes each rank's slice
// (its output): direct reads its slice from the n-1 peers, the ring moves one slice a step.
func AllGatherTime(a comm.Algo, n int, bytes int64, alpha time.Duration, beta float64) (time.Duration, error) {
	if err := checkModelArgs(n, bytes, alpha, beta); err != nil {
		return 0, fmt.Errorf("perf: α-β model for all-gather %v: %w", a, err)
	}
	steps, s := float64(n-1), float64(bytes)
	switch {
	case n == 1:
		return 0, nil
	case a == comm.OneShot:
		return durationOf(2*alpha.Seconds() + steps*s/beta), nil
	case a == comm.Ring:
		return durationOf(steps * (alpha.Seconds() + s/beta)), nil
	}
	return 0, fmt.Errorf("perf: α-β model has no all-gather time for algorithm %v (want oneshot or ring)", a)
}

// SeqParallelTime returns the α-β model's time for the exchange of the fused
// sequence-parallel all-reduce + RMSNorm (fused.SeqParallel) of bytes per rank over n
// ranks: 4α + 3(n-1)/n · S/β. It is two-shot's shape (stage, barrier, reduce 1/n of the
// rows, barrier, gather) with half as much again to gather, because the residual rows go
// around with the normalized ones; its norm runs on S/n, which the kernel's local work
// says, not this exchange.
func SeqParallelTime(n int, bytes int64, alpha time.Duration, beta float64) (time.Duration, error) {
	if err := checkModelArgs(n, bytes, alpha, beta); err != nil {
		return 0, fmt.Errorf("perf: α-β model for the sequence-parallel all-reduce: %w", err)
	}
	if n == 1 {
		return 0, nil
	}
	nf := float64(n)
	return durationOf(4*alpha.Seconds() + 3*(nf-1)/nf*float64(bytes)/beta), nil
}

// OneShotTwoShotCrossover returns the message size S* in bytes above which the model's
// two-shot beats one-shot: S* = 2αβ / ((n-1)(1 - 2/n)), about 257 KB at n = 8, α = 1.5 µs,
// β = 450e9 B/s. For n ≤ 2 one-shot never loses and the result is +Inf.
func OneShotTwoShotCrossover(n int, alpha time.Duration, beta float64) float64 {
	if n <= 2 {
		return math.Inf(1)
	}
	nf := float64(n)
	return 2 * alpha.Seconds() * beta / ((nf - 1) * (1 - 2/nf))
}

func checkModelArgs(n int, bytes int64, alpha time.Duration, beta float64) error {
	switch {
	case n < 1:
		return fmt.Errorf("world size n = %d, want ≥ 1", n)
	case bytes < 0:
		return fmt.Errorf("message size %d bytes, want ≥ 0", bytes)
	case alpha < 0:
		return fmt.Errorf("alpha = %v, want ≥ 0", alpha)
	case !(beta > 0) || math.IsInf(beta, 1):
		return fmt.Errorf("beta = %g B/s, want a finite value > 0", beta)
	}
	return nil
}

// modelSeconds is the model in float64 seconds, so that comparisons between algorithms do
// not suffer from rounding to whole nanoseconds: the algorithm's cost shape (comm.Cost),
// steps·α + bytes/β. ok is false for Auto and the algorithms without a shape. Algorithms
// with equal steps and bytes (ring, one-shot and NVLS at n = 2) tie exactly.
func modelSeconds(a comm.Algo, n int, s, alpha, beta float64) (secs float64, ok bool) {
	cost, ok := a.Cost()
	switch {
	case !ok:
		return 0, false
	case n <= 1:
		return 0, true
	}
	return cost.Steps(n)*alpha + cost.Bytes(n, s)/beta, true
}

// priced reports whether the α-β model prices algorithm a: it has a cost shape.
func priced(a comm.Algo) bool {
	_, ok := a.Cost()
	return ok
}

// durationOf rounds seconds to the nearest nanosecond, saturating instead of overflowing.
func durationOf(secs float64) time.Duration {
	ns := math.Round(secs * 1e9)
	if ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}
