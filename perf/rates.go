package perf

import (
	"fmt"
	"math"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// The collective model on one host. An algorithm's shape says how many steps a call takes
// and how many bytes cross each rank's link (comm.Cost, from comm's registry, for the
// all-reduces); its rate under a protocol says what a step and a byte cost on a profile.
// S bytes per rank over n ranks cost
//
//	base + steps(n)·step + bytes(n, S)/bw
//
// which is NCCL tuner's shape, baseLat + nsteps·hwLat + bytes/busBw, and on a profile
// without a Calibration the α-β model of DESIGN.md: base 0, a step of α, bw β:
//
//	ring      2(n-1)α + 2(n-1)/n · S/β
//	tree      2·d·α + 2·S/β,  d = ⌊log2 n⌋
//	one-shot  2α + (n-1)·S/β
//	two-shot  4α + 2(n-1)/n · S/β
//	NVLS      2α + S/β
//
// The tree's terms follow NCCL's tuning model (ncclTopoTuneModel): its tree latency is one
// hop per tree level up and again down, and its algorithm bandwidth half the bus
// bandwidth for every algorithm but the ring, so S bytes cost 2·S/β: each of the two trees
// carries S/2, and an inner rank receives its two children's halves and forwards one.
// Pipelining the slices is what lets the terms add instead of multiply. Under this model
// the tree never beats the best of one-shot and two-shot on one node (at n = 3 it ties
// one-shot); NCCL picks it across nodes, where log2(nNodes) beats a ring's 2(nNodes-1)
// network hops.
//
// A Calibration (hw) sets the rates from published measurements instead: one-shot,
// two-shot and NVLS take their kernel's fixed cost as base and no cost per step, at the
// bandwidth they sustain (β·eff); tpslice's ring and tree the ring's Base, PerStep and
// efficiency, scaled per protocol (protoCostOf); an all-reduce the calibration does not
// cover (the seed's baseline) one-shot's kernel, its fixed cost spread over one-shot's
// steps, at its own steps and bytes: priced at the idealised α with full bandwidth beside
// calibrated kernels, a slower schedule would look faster than one-shot. NCCL's ring
// takes each protocol's RingCost (nccl.go).
//
// An all-gather or a reduce-scatter moves n-1 slices of S a rank: one-shot's pattern in 2
// steps, the ring's in n-1 (gatherShapes); other algorithms do not run it. The fused
// sequence-parallel all-reduce + RMSNorm runs direct only, with two-shot's rate and shape
// and half as much again to gather, because the residual rows go around with the
// normalized ones: 4 steps and 3(n-1)/n·S (its norm runs on S/n, which the kernel's local
// work says, not this exchange).
//
// Lamport (flag-free one-shot) is priced exactly like one-shot: it moves the same bytes,
// and what it saves (the trailing barrier) is below this model's resolution.

// rate is what a step and a byte of one algorithm under one protocol cost on a profile.
type rate struct {
	base, step time.Duration
	bw         float64 // bytes per second
	// idealised: the α-β model's, which sums its steps with the bytes before rounding to
	// the nanosecond, as DESIGN.md's table does; a calibration's steps are whole
	// nanoseconds added to the rounded bandwidth term.
	idealised bool
}

// at prices shape for S bytes over n ≥ 2 ranks. It also returns the time in seconds that
// Choose compares: the α-β model's before rounding, as DESIGN.md's table compares, so that
// its sub-nanosecond differences still order the algorithms; a calibration's as rounded.
func (r rate) at(shape comm.Cost, n int, s float64) (time.Duration, float64) {
	steps, move := shape.Steps(n), shape.Bytes(n, s)/r.bw
	if r.idealised {
		exact := steps*r.step.Seconds() + move
		return addSat(r.base, durationOf(exact)), r.base.Seconds() + exact
	}
	d := addSat(r.base+time.Duration(steps)*r.step, durationOf(move))
	return d, d.Seconds()
}

// gatherShapes are the all-gather's (and the reduce-scatter's) shapes: n-1 slices of S.
var gatherShapes = map[comm.Algo]comm.Cost{
	comm.OneShot: {Steps: func(int) float64 { return 2 }, Bytes: slicesBytes},
	comm.Ring:    {Steps: func(n int) float64 { return float64(n - 1) }, Bytes: slicesBytes},
}

func slicesBytes(n int, s float64) float64 { return float64(n-1) * s }

// seqParallelShape is the fused sequence-parallel exchange: two-shot's steps, with the
// residual rows gathered too.
var seqParallelShape = comm.Cost{
	Steps: func(int) float64 { return 4 },
	Bytes: func(n int, s float64) float64 { nf := float64(n); return 3 * (nf - 1) / nf * s },
}

// tpsliceRates are tpslice's collectives' rates on p: the calibration's, or the α-β
// model's without one. The two-level all-reduce has none: it is priced across hosts only.
func tpsliceRates(p hw.Profile) map[comm.Choice]rate {
	rates := map[comm.Choice]rate{}
	beta, c := p.LinkBytesPerSec, p.Calibration
	for _, a := range comm.Algos {
		if _, shaped := a.Cost(); !shaped {
			continue
		}
		simple := rate{step: p.Alpha, bw: beta, idealised: true}
		if c != nil {
			simple = calibratedRate(c, beta, a)
		}
		rates[comm.Choice{Algo: a, Proto: comm.Simple}] = simple
		for _, proto := range []comm.Proto{comm.LL, comm.LL128} {
			if comm.TakesProto(a) { // the ring and the tree
				rates[comm.Choice{Algo: a, Proto: proto}] = protoCostOf(proto).scale(simple)
			}
		}
	}
	return rates
}

// calibratedRate is algorithm a's Simple rate from calibration c, at link bandwidth beta.
func calibratedRate(c *hw.Calibration, beta float64, a comm.Algo) rate {
	kernel := func(k hw.KernelCost) rate { return rate{base: k.Fixed, bw: beta * k.Efficiency} }
	switch a {
	case comm.OneShot, comm.Lamport:
		return kernel(c.OneShot)
	case comm.TwoShot:
		return kernel(c.TwoShot)
	case comm.NVLS:
		return kernel(c.NVLS)
	case comm.Ring, comm.Tree:
		return rate{base: c.Ring.Base, step: c.Ring.PerStep, bw: beta * c.Ring.Efficiency}
	}
	oneShot, _ := comm.OneShot.Cost() // its steps do not depend on n
	return rate{step: time.Duration(float64(c.OneShot.Fixed) / oneShot.Steps(2)), bw: beta * c.OneShot.Efficiency}
}

// oneHost prices c on one host, rounded and exactly.
func (m Costs) oneHost(c Collective) (time.Duration, float64, error) {
	a, op := c.Algo, c.Op
	shape, ok := a.Cost()
	switch {
	case op == device.OpReduceScatterRMSNormAllGather && a != comm.OneShot:
		return 0, 0, fmt.Errorf("perf: %s runs direct (oneshot), not %v", op, a)
	case op == device.OpReduceScatterRMSNormAllGather:
		a, shape = comm.TwoShot, seqParallelShape
	case op == device.OpAllGather || op == device.OpReduceScatter:
		if shape, ok = gatherShapes[a]; !ok {
			return 0, 0, fmt.Errorf("perf: %s: no all-gather time for algorithm %v (want oneshot or ring)", op, a)
		}
	}
	r, priced := m.rates[comm.Choice{Algo: a, Proto: orSimple(c.Proto)}]
	switch {
	case !ok || !priced:
		return 0, 0, fmt.Errorf("perf: %s %v is not priced on one host (want %s)", op, a, comm.AlgoNames(m.pricedOnOneHost))
	case c.Ranks == 1:
		return 0, 0, nil
	}
	d, exact := r.at(shape, c.Ranks, float64(c.Bytes))
	return d, exact, nil
}

// pricedOnOneHost reports whether m has a rate for a on one host.
func (m Costs) pricedOnOneHost(a comm.Algo) bool {
	_, ok := m.rates[comm.Choice{Algo: a, Proto: comm.Simple}]
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

// addSat adds two non-negative durations, saturating instead of overflowing.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
