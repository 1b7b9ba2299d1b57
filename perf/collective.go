package perf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// Collective is one collective call to price: what every rank of a TP group runs.
type Collective struct {
	// Op is the collective: device.OpAllReduce, the exchange of OpAllReduceRMSNorm or of
	// OpReduceScatterRMSNormAllGather, OpAllGather or OpReduceScatter.
	Op device.CollectiveOp
	// Algo is the algorithm. tpslice's collectives price a concrete one (Costs.Choose picks
	// one for comm.Auto); NCCL runs the ring, so comm.Ring or comm.Auto.
	Algo comm.Algo
	// Proto is the protocol of an algorithm that takes one (comm.TakesProto). comm.ProtoAuto
	// is the algorithm's default for tpslice's collectives (Simple), and for NCCL the
	// fastest, as NCCL's tuner picks.
	Proto comm.Proto
	// Ranks is the number of ranks n, at least 1. Hosts is how many hosts they split over
	// evenly, each with Ranks/Hosts GPUs; 0 or 1 is one host.
	Ranks, Hosts int
	// Bytes is the message per rank: for a reduce-scatter each rank's slice (its output),
	// for a low-precision wire what the wire carries (comm.Wire.MessageBytes).
	Bytes int64
}

// ErrNoNetwork is wrapped by the errors of pricing across hosts on a profile without an
// InterHost network.
var ErrNoNetwork = errors.New("the profile has no network between hosts")

// Costs prices collectives on one hardware profile, for tpslice's collectives or NCCL's:
// a rate (fixed cost, cost per step, bandwidth) per algorithm and protocol, which every
// call applies to its algorithm's shape (steps and bytes, rates.go), as NCCL's tuner
// indexes its latencies and bandwidths by algorithm and protocol (src/graph/tuning.cc).
// The rates come from the profile's Calibration, or from its α and β alone without one
// (the idealised α-β model, DESIGN.md): a profile that sets only Alpha and
// LinkBytesPerSec prices that model. The zero value prices nothing.
type Costs struct {
	p     hw.Profile
	impl  Collectives
	rates map[comm.Choice]rate // tpslice: ProtoAuto is stored as Simple; NCCL: its ring's protocols
	err   error                // a profile the model cannot use: every call fails with it
}

// CostsOf returns the costs of impl's collectives on profile p. A profile whose α or β the
// model cannot use makes every call fail, naming the field.
func CostsOf(p hw.Profile, impl Collectives) Costs {
	m := Costs{p: p, impl: impl}
	switch {
	case p.Alpha < 0:
		m.err = fmt.Errorf("perf: profile %q: alpha = %v, want ≥ 0", p.Name, p.Alpha)
	case !(p.LinkBytesPerSec > 0) || math.IsInf(p.LinkBytesPerSec, 1):
		m.err = fmt.Errorf("perf: profile %q: beta = %g B/s, want a finite value > 0", p.Name, p.LinkBytesPerSec)
	case impl == NCCL:
		m.rates = ncclRates(p)
	default:
		m.rates = tpsliceRates(p)
	}
	return m
}

// Time is what one call c costs on the GPUs: the exchange, without the launch and without
// a fused op's own memory traffic. One rank costs 0. It fails, naming the field, for a
// request the model does not price: an unknown op, fewer than one rank, a negative size,
// ranks that do not split evenly over the hosts, hosts without a network, an algorithm the
// costs do not cover for that op and number of hosts (comm.Auto included: Choose picks
// one), or a protocol the algorithm does not take.
func (m Costs) Time(c Collective) (time.Duration, error) {
	d, _, err := m.price(c)
	return d, err
}

// price is Time, with the time in seconds that Choose compares (rate.at).
func (m Costs) price(c Collective) (time.Duration, float64, error) {
	if err := m.check(c); err != nil {
		return 0, 0, err
	}
	if m.impl == NCCL {
		d, err := m.ncclTime(c)
		return d, d.Seconds(), err
	}
	if c.Algo == comm.Lamport { // one-shot's bytes and steps; what it saves is below the model's resolution
		c.Algo = comm.OneShot
	}
	if c.Hosts > 1 {
		return m.acrossHosts(c)
	}
	if c.Algo == comm.TwoLevel {
		return 0, 0, fmt.Errorf("perf: %v needs ranks on several hosts", c.Algo)
	}
	return m.oneHost(c)
}

// check rejects what m cannot price, naming the field.
func (m Costs) check(c Collective) error {
	if err := m.checkShape(c); err != nil {
		return err
	}
	switch {
	case m.impl == NCCL && c.Algo != comm.Auto && c.Algo != comm.Ring:
		return fmt.Errorf("perf: Algo %v: NCCL runs the ring", c.Algo)
	case m.impl == NCCL:
		return nil
	case !slices.Contains(comm.Algos, c.Algo) && !slices.Contains(comm.HostAlgos, c.Algo):
		return fmt.Errorf("perf: Algo %v: want %s", c.Algo, comm.AlgoNames(nil))
	case c.Proto != comm.ProtoAuto && c.Proto != comm.Simple && (!comm.TakesProto(c.Algo) || c.Op == device.OpAllGather):
		return fmt.Errorf("perf: %s %v under protocol %v: protocols apply to the ring's and the tree's all-reduce and reduce-scatter only", c.Op, c.Algo, c.Proto)
	}
	return nil
}

// checkShape rejects what no algorithm can price: every field but the algorithm.
func (m Costs) checkShape(c Collective) error {
	ops := []device.CollectiveOp{device.OpAllReduce, device.OpAllReduceRMSNorm, device.OpAllGather, device.OpReduceScatter, device.OpReduceScatterRMSNormAllGather}
	switch {
	case m.err != nil:
		return m.err
	case m.rates == nil:
		return errors.New("perf: the zero Costs prices nothing (use CostsOf)")
	case !slices.Contains(ops, c.Op):
		return fmt.Errorf("perf: Op %q: want one of %v", c.Op, ops)
	case c.Ranks < 1:
		return fmt.Errorf("perf: Ranks: world size n = %d, want ≥ 1", c.Ranks)
	case c.Bytes < 0:
		return fmt.Errorf("perf: Bytes: message size %d bytes, want ≥ 0", c.Bytes)
	case c.Hosts < 0:
		return fmt.Errorf("perf: Hosts = %d, want ≥ 0", c.Hosts)
	case c.Hosts > 1 && !m.p.InterHost.Network():
		return fmt.Errorf("perf: %v across %d hosts on %s: %w", c.Algo, c.Hosts, m.p.Name, ErrNoNetwork)
	case c.Hosts > 1 && c.Ranks%c.Hosts != 0:
		return fmt.Errorf("perf: Hosts: %d ranks do not split evenly over %d hosts", c.Ranks, c.Hosts)
	case c.Proto != comm.ProtoAuto && !slices.Contains(comm.Protos, c.Proto):
		return fmt.Errorf("perf: Proto %v: want auto, %v, %v or %v", c.Proto, comm.LL, comm.LL128, comm.Simple)
	}
	return nil
}
