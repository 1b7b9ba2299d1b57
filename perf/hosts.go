package perf

import (
	"fmt"
	"math"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
)

// The collective model across hosts. A TP group of n ranks over H hosts of L = n/H GPUs
// each has two fabrics: the profile's link β inside a host and its InterHost network
// (bandwidth β_net per GPU, each GPU behind its own NIC, and latency λ per exchange)
// between hosts. With the rates inside a host (rates.go) — a kernel's fixed cost
// Fixed = base + steps·step and its bandwidth β·eff — S bytes per rank cost:
//
//	two-level  Fixed(two-shot) + 2(L-1)/L·S/(β·eff) + λ + (H-1)·(S/L)/β_net
//	one-shot   Fixed + max((L-1)·S/(β·eff), (n-L)·S/β_net) + 2λ
//	two-shot   Fixed + max(2(L-1)/n·S/(β·eff), 2(n-L)/n·S/β_net) + 2λ
//	ring       Base + 2(n-1)·max(PerStep·lat_P, λ) + 2(n-1)/n·S/(min(β·eff, β_net)·bw_P)
//
// The two-level all-reduce (comm.TwoLevel) is a two-shot inside each host around one
// exchange of 1/L of the message across hosts. The flat algorithms read every peer as if
// it were on the same switch: a rank's reads from the other hosts' n-L ranks all go
// through its own NIC, in parallel with its reads inside the host (hence the max), and
// every barrier over all ranks is an exchange across the network (λ each). The ring's
// cross-host edge carries the same bytes as every other, so the network's rate and latency
// pace every one of its 2(n-1) steps; lat_P and bw_P are its protocol's (protoCostOf, 1
// for Simple), which the network's own latency per exchange does not follow. An
// all-gather moves (n-1)·S in one-shot's pattern and the ring's n-1 steps of S. These are
// the algorithms comm.Offered offers.
//
// NCCL's ring through every rank is priced as its tuner prices rings across nodes: 2(n-1)
// steps (n-1 for an all-gather), of which 2(H-1) (H-1) cross the network at ncclNetHop and
// the others take the calibrated in-host step, over the in-host bus bandwidth or the
// host's NICs together (L·β_net: NCCL spreads its rings' channels over the NICs),
// whichever is lower. It is modelled on calibrated profiles only.

// acrossHosts prices tpslice's c over c.Hosts > 1 hosts, rounded and exactly.
func (m Costs) acrossHosts(c Collective) (time.Duration, float64, error) {
	a, gather := c.Algo, c.Op == device.OpAllGather
	L, H, s := float64(c.Ranks/c.Hosts), float64(c.Hosts), float64(c.Bytes)
	nf := float64(c.Ranks)
	lat, net := m.p.InterHost.Latency.Seconds(), m.p.InterHost.BytesPerSec
	oneShot, twoShot, ring := m.kernel(comm.OneShot, c.Ranks), m.kernel(comm.TwoShot, c.Ranks), m.rates[comm.Choice{Algo: comm.Ring, Proto: comm.Simple}]
	var secs float64
	switch {
	case c.Proto != comm.ProtoAuto && c.Proto != comm.Simple && a != comm.Ring:
		return 0, 0, fmt.Errorf("perf: %v %v across hosts: protocol %v applies to the ring's all-reduce and reduce-scatter only", c.Op, a, c.Proto)
	case a == comm.TwoLevel && !gather:
		secs = twoShot.fixed + 2*(L-1)/L*s/twoShot.bw + lat + (H-1)*(s/L)/net
	case a == comm.OneShot:
		secs = oneShot.fixed + math.Max((L-1)*s/oneShot.bw, (nf-L)*s/net) + 2*lat
	case a == comm.TwoShot && !gather:
		secs = twoShot.fixed + math.Max(2*(L-1)/nf*s/twoShot.bw, 2*(nf-L)/nf*s/net) + 2*lat
	case a == comm.Ring:
		steps, coef := 2*(nf-1), 2*(nf-1)/nf
		if gather {
			steps, coef = nf-1, nf-1
		}
		pc := protoCostOf(c.Proto)
		secs = ring.base.Seconds() + steps*math.Max(ring.step.Seconds()*pc.latency, lat) + coef*s/(math.Min(ring.bw, net)*pc.bandwidth)
	default:
		return 0, 0, fmt.Errorf("perf: %s %v is not priced across hosts (want %v)", c.Op, a, comm.Offered(m.p.Fabric, m.p.NVLS, c.Hosts, c.Ranks))
	}
	d := durationOf(secs)
	return d, d.Seconds(), nil
}

// kernelCost is a peer-buffer kernel's fixed cost (seconds) and sustained bandwidth.
type kernelCost struct{ fixed, bw float64 }

// kernel is algorithm a's all-reduce kernel inside one host at n ranks: its Simple rate's
// fixed cost and steps, and its bandwidth.
func (m Costs) kernel(a comm.Algo, n int) kernelCost {
	r := m.rates[comm.Choice{Algo: a, Proto: comm.Simple}]
	shape, _ := a.Cost()
	return kernelCost{fixed: r.base.Seconds() + shape.Steps(n)*r.step.Seconds(), bw: r.bw}
}

// ncclNetHop is NCCL's tuner's latency of a ring step over the network, per protocol
// (NVIDIA/nccl src/graph/tuning.cc, hwLat[NCCL_HW_NET], ring: LL 2.7, LL128 4.0, Simple
// 9.6 µs).
var ncclNetHop = map[comm.Proto]time.Duration{comm.LL: 2700 * time.Nanosecond, comm.LL128: 4000 * time.Nanosecond, comm.Simple: 9600 * time.Nanosecond}

// ncclAcrossHosts prices c on NCCL's ring over c.Hosts > 1 hosts with its in-host rate r.
func (m Costs) ncclAcrossHosts(c Collective, r rate) (time.Duration, error) {
	if m.p.Calibration == nil {
		return 0, fmt.Errorf("perf: NCCL across hosts is modelled on calibrated profiles only, not %s", m.p.Name)
	}
	nf, L := float64(c.Ranks), float64(c.Ranks/c.Hosts)
	steps, inter, coef := 2*(nf-1), 2*float64(c.Hosts-1), 2*(nf-1)/nf
	if c.Op == device.OpAllGather {
		steps, inter, coef = nf-1, float64(c.Hosts-1), nf-1
	}
	bw := math.Min(r.bw, L*m.p.InterHost.BytesPerSec)
	secs := r.base.Seconds() + (steps-inter)*r.step.Seconds() + inter*ncclNetHop[c.Proto].Seconds() + coef*float64(c.Bytes)/bw
	return durationOf(secs), nil
}
