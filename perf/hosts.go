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

// The collective model across hosts. A TP group of n ranks over H hosts of L = n/H GPUs
// each has two fabrics: the profile's link β inside a host and its InterHost network
// (bandwidth β_net per GPU, each GPU behind its own NIC, and latency λ per exchange)
// between hosts. With the intra-host constants of CollectiveTime — Fixed and β·eff of the
// calibrated kernels, or steps·α and β without a calibration — S bytes per rank cost:
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
// for Simple). An all-gather moves (n-1)·S in one-shot's pattern and the ring's n-1 steps
// of S. These are the algorithms comm.OfferedHosts offers.

// ErrNoNetwork is wrapped by the errors of pricing across hosts on a profile without an
// InterHost network.
var ErrNoNetwork = errors.New("the profile has no network between hosts")

// CollectiveTimeHosts is CollectiveTimeProto on a node of hosts hosts that the n ranks
// split over evenly; with one host it is CollectiveTimeProto. It is the one entry point a
// pricer needs: every choice, protocol and host count. The ring across hosts runs its
// protocol as on one host (protoCostOf: its in-host step's latency, and the payload share
// of every link, the network's included); the network's own latency per exchange does not
// change with it. It fails, naming what was wrong, for a profile without an InterHost
// network, ranks that do not split evenly, the two-level all-reduce on one host, a protocol
// for anything but the ring's all-reduce or reduce-scatter, and algorithms the model does
// not price across hosts.
func CollectiveTimeHosts(p hw.Profile, hosts int, op device.CollectiveOp, ch comm.Choice, n int, bytes int64) (time.Duration, error) {
	a := ch.Algo
	if hosts <= 1 {
		if a == comm.TwoLevel {
			return 0, fmt.Errorf("perf: %v needs ranks on several hosts", a)
		}
		return CollectiveTimeProto(p, op, ch, n, bytes)
	}
	gather := op == device.OpAllGather
	switch {
	case !p.InterHost.Network():
		return 0, fmt.Errorf("perf: %v across %d hosts on %s: %w", a, hosts, p.Name, ErrNoNetwork)
	case n%hosts != 0:
		return 0, fmt.Errorf("perf: %d ranks do not split evenly over %d hosts", n, hosts)
	case bytes < 0:
		return 0, fmt.Errorf("perf: message size %d bytes, want ≥ 0", bytes)
	case ch.Proto != comm.ProtoAuto && ch.Proto != comm.Simple && (a != comm.Ring || gather):
		return 0, fmt.Errorf("perf: %v %v across hosts: protocol %v applies to the ring's all-reduce and reduce-scatter only", op, a, ch.Proto)
	}
	L, H, s := float64(n/hosts), float64(hosts), float64(bytes)
	nf := float64(n)
	lat, net := p.InterHost.Latency.Seconds(), p.InterHost.BytesPerSec
	k := intraCosts(p)
	var secs float64
	switch {
	case a == comm.TwoLevel && !gather:
		secs = k.twoShot.fixed + 2*(L-1)/L*s/k.twoShot.bw + lat + (H-1)*(s/L)/net
	case a == comm.OneShot || a == comm.Lamport:
		secs = k.oneShot.fixed + math.Max((L-1)*s/k.oneShot.bw, (nf-L)*s/net) + 2*lat
	case a == comm.TwoShot && !gather:
		secs = k.twoShot.fixed + math.Max(2*(L-1)/nf*s/k.twoShot.bw, 2*(nf-L)/nf*s/net) + 2*lat
	case a == comm.Ring:
		steps, coef := 2*(nf-1), 2*(nf-1)/nf
		if gather {
			steps, coef = nf-1, nf-1
		}
		pc := protoCostOf(ch.Proto)
		secs = k.ringBase + steps*math.Max(k.ringStep*pc.latency, lat) + coef*s/(math.Min(k.ringBW, net)*pc.bandwidth)
	default:
		return 0, fmt.Errorf("perf: %s %v is not priced across hosts (want %v)", op, a, comm.OfferedHosts(p.Fabric, p.NVLS, hosts, n))
	}
	return durationOf(secs), nil
}

// kernelCost is a peer-buffer kernel's fixed cost (seconds) and sustained bandwidth.
type kernelCost struct{ fixed, bw float64 }

// intraHost is what the kernels cost inside one host, from the profile's calibration or,
// without one, the α-β model's steps·α at the full link rate.
type intraHost struct {
	oneShot, twoShot           kernelCost
	ringBase, ringStep, ringBW float64
}

func intraCosts(p hw.Profile) intraHost {
	beta, alpha := p.LinkBytesPerSec, p.Alpha.Seconds()
	c := p.Calibration
	if c == nil {
		return intraHost{oneShot: kernelCost{2 * alpha, beta}, twoShot: kernelCost{4 * alpha, beta}, ringStep: alpha, ringBW: beta}
	}
	return intraHost{
		oneShot:  kernelCost{c.OneShot.Fixed.Seconds(), beta * c.OneShot.Efficiency},
		twoShot:  kernelCost{c.TwoShot.Fixed.Seconds(), beta * c.TwoShot.Efficiency},
		ringBase: c.Ring.Base.Seconds(), ringStep: c.Ring.PerStep.Seconds(), ringBW: beta * c.Ring.Efficiency,
	}
}

// OfferedHosts is the tpslice algorithms profile p offers at world size n over hosts hosts
// (comm.OfferedHosts), in comm.OfferedHosts' order; Offered on one host.
func OfferedHosts(p hw.Profile, hosts, n int) []comm.Algo {
	if hosts <= 1 {
		return Offered(p, n)
	}
	return comm.OfferedHosts(p.Fabric, p.NVLS, hosts, n)
}

// fastestHosts is the offered algorithm with the lowest CollectiveTimeHosts for an
// all-reduce of bytes; ties go to the earlier one in OfferedHosts' order.
func fastestHosts(p hw.Profile, hosts, n int, bytes int64) comm.Algo {
	var best comm.Algo
	bestT := time.Duration(math.MaxInt64)
	for _, a := range OfferedHosts(p, hosts, n) {
		if t, err := CollectiveTimeHosts(p, hosts, device.OpAllReduce, comm.Choice{Algo: a}, n, bytes); err == nil && t < bestT {
			best, bestT = a, t
		}
	}
	return best
}

// ModelTableHosts is ModelTable for TP groups that span hosts hosts: the table records
// them (comm.Table.Hosts), so that a communicator of another node does not consult it.
// World sizes that do not split evenly over the hosts are skipped.
func ModelTableHosts(p hw.Profile, hosts int, worlds []int, maxBytes int64) *comm.Table {
	if hosts <= 1 {
		return ModelTable(p, worlds, maxBytes)
	}
	t := &comm.Table{Source: "model:" + p.Name, Hosts: hosts}
	ws := slices.Clone(worlds)
	slices.Sort(ws)
	for _, n := range slices.Compact(ws) {
		for b := 0; n >= hosts && n%hosts == 0 && b <= comm.Bucket(maxBytes); b++ {
			_ = t.Set(n, b, fastestHosts(p, hosts, n, comm.BucketBytes(b))) // cannot fail: n ≥ 1, b in range, a real Algo
		}
	}
	return t
}

// ncclNetHop is NCCL's tuner's latency of a ring step over the network, per protocol
// (NVIDIA/nccl src/graph/tuning.cc, hwLat[NCCL_HW_NET], ring: LL 2.7, LL128 4.0, Simple
// 9.6 µs).
var ncclNetHop = [...]time.Duration{comm.LL: 2700 * time.Nanosecond, comm.LL128: 4000 * time.Nanosecond, comm.Simple: 9600 * time.Nanosecond}

// NCCLTimeHosts is NCCLTime on a node of hosts hosts that the n ranks split over evenly:
// NCCL's ring through every rank, priced as its tuner prices rings across nodes —
// 2(n-1) steps (n-1 for an all-gather), of which 2(H-1) (H-1) cross the network at
// ncclNetHop and the others take the calibrated in-host step — over the in-host bus
// bandwidth or the host's NICs together (L·β_net: NCCL spreads its rings' channels over
// the NICs), whichever is lower. ok is false on one host where NCCLTime's is, and across
// hosts on a profile without a Calibration or an InterHost network, or ranks that do not
// split evenly.
func NCCLTimeHosts(p hw.Profile, hosts int, op device.CollectiveOp, proto comm.Proto, n int, bytes int64) (d time.Duration, ok bool) {
	if hosts <= 1 {
		return NCCLTime(p, op, proto, n, bytes)
	}
	c := p.Calibration
	if c == nil || !p.InterHost.Network() || n%hosts != 0 || int(proto) >= len(ncclNetHop) {
		return 0, false
	}
	r := [...]hw.RingCost{comm.LL: c.LL, comm.LL128: c.LL128, comm.Simple: c.Simple}[proto]
	nf, L := float64(n), float64(n/hosts)
	steps, inter, coef := 2*(nf-1), 2*float64(hosts-1), 2*(nf-1)/nf
	if op == device.OpAllGather {
		steps, inter, coef = nf-1, float64(hosts-1), nf-1
	}
	bw := math.Min(p.LinkBytesPerSec*r.Efficiency, L*p.InterHost.BytesPerSec)
	secs := r.Base.Seconds() + (steps-inter)*r.PerStep.Seconds() + inter*ncclNetHop[proto].Seconds() + coef*float64(bytes)/bw
	return durationOf(secs), true
}

// NCCLFastestHosts is NCCLFastest on a node of hosts hosts (NCCLTimeHosts); ok is false
// where no protocol is modelled.
func NCCLFastestHosts(p hw.Profile, hosts int, op device.CollectiveOp, n int, bytes int64) (best time.Duration, proto comm.Proto, ok bool) {
	for _, pr := range comm.Protos {
		if d, found := NCCLTimeHosts(p, hosts, op, pr, n, bytes); found && (!ok || d < best) {
			best, proto, ok = d, pr, true
		}
	}
	return best, proto, ok
}
