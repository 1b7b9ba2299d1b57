package perf

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// The collective model. On a profile with a Calibration (hw), S bytes per rank over n
// ranks cost:
//
//	tpslice one-shot, two-shot, NVLS   Fixed + coef·S/(β·eff)
//	tpslice ring, NCCL ring × protocol Base + steps·PerStep + coef·S/(β·eff)
//
// with coef the algorithm's bytes per byte of message as comm's α-β model has it (one-shot
// n-1, two-shot and ring 2(n-1)/n, NVLS 1; an all-gather or reduce-scatter n-1 of each
// rank's slice; the sequence-parallel all-reduce + RMSNorm 3(n-1)/n with two-shot's fixed
// cost and efficiency, the shape of its kernel) and 2(n-1) ring steps for an all-reduce,
// n-1 for an all-gather or a reduce-scatter. tpslice's ring and tree under LL or LL128 scale
// PerStep and eff as protoCostOf says. NCCL's time is the fastest of LL, LL128 and Simple, as
// NCCL's tuner picks (NVIDIA/nccl src/graph/tuning.cc has this shape: baseLat + nsteps·
// hwLat + bytes/busBw per algorithm and protocol). Lamport is priced as one-shot; another
// all-reduce the calibration does not cover as one-shot's kernel with its own steps and
// bytes (peerKernelTime); every algorithm on a profile without a calibration (PCIe,
// PROFILE-ideal) by comm's idealised α-β model with the profile's α and full link
// bandwidth, and NCCL by its tuner's own ring/LL constants below.

// NCCL's tuner constants for the ring with the LL protocol (NVIDIA/nccl src/graph/tuning.cc,
// baseLat and hwLat): a base latency per call plus one hop per ring step; its bus bandwidth
// is a quarter of the link's. They price NCCL on a profile without a Calibration.
const (
	ncclRingLLBase      = 6600 * time.Nanosecond
	ncclRingLLHopNVLink = 600 * time.Nanosecond
	ncclRingLLHopPCIe   = 1000 * time.Nanosecond
	ncclLLBusBWFraction = 0.25
)

// CollectiveTime is the model's time for one collective op (OpAllReduce, or the exchange of
// OpAllReduceRMSNorm or OpReduceScatterRMSNormAllGather; OpAllGather, OpReduceScatter) of
// bytes per rank (for a reduce-scatter: each rank's slice, its output) over n ranks with
// tpslice's algorithm a on profile p, without the launch and without a fused op's own
// memory traffic. One rank costs 0.
func CollectiveTime(p hw.Profile, op device.CollectiveOp, a comm.Algo, n int, bytes int64) (time.Duration, error) {
	return CollectiveTimeProto(p, op, comm.Choice{Algo: a}, n, bytes)
}

// CollectiveTimeProto is CollectiveTime for algorithm ch.Algo under protocol ch.Proto (see
// protoCostOf; ProtoAuto and Simple price alike). A protocol for an algorithm that takes
// none (comm.TakesProto), or for an all-gather, fails.
func CollectiveTimeProto(p hw.Profile, op device.CollectiveOp, ch comm.Choice, n int, bytes int64) (time.Duration, error) {
	a, pc := ch.Algo, protoCostOf(ch.Proto)
	if ch.Proto != comm.ProtoAuto && ch.Proto != comm.Simple && (!comm.TakesProto(a) || op == device.OpAllGather) {
		return 0, fmt.Errorf("perf: %v %v: protocol %v applies to the ring and tree all-reduce only", op, a, ch.Proto)
	}
	if a == comm.Lamport {
		a = comm.OneShot
	}
	if op == device.OpReduceScatterRMSNormAllGather {
		return seqParallelTime(p, a, n, bytes)
	}
	gather := scatterGather(op)
	if c := p.Calibration; c != nil && n > 1 {
		switch a {
		case comm.OneShot:
			return kernelTime(c.OneShot, p, gather, a, n, bytes)
		case comm.TwoShot:
			return kernelTime(c.TwoShot, p, gather, a, n, bytes)
		case comm.NVLS:
			return kernelTime(c.NVLS, p, gather, a, n, bytes)
		case comm.Ring:
			return ringTime(pc.ring(c.Ring), p, gather, n, bytes), nil
		case comm.Tree:
			if !gather {
				return treeTime(pc.ring(c.Ring), p, n, bytes)
			}
		default:
			if t, ok := peerKernelTime(c.OneShot, p, a, n, bytes); ok && !gather {
				return t, nil
			}
		}
	}
	// no calibration, or an algorithm it does not cover: the idealised model
	if gather {
		return AllGatherTime(a, n, bytes, p.Alpha, p.LinkBytesPerSec)
	}
	return ModelTimeProto(ch.Proto, a, n, bytes, p.Alpha, p.LinkBytesPerSec)
}

// scatterGather reports whether op is priced as an all-gather: n-1 slices per rank.
func scatterGather(op device.CollectiveOp) bool {
	return op == device.OpAllGather || op == device.OpReduceScatter
}

// seqParallelTime prices the fused sequence-parallel exchange, which runs only direct
// (OneShot): two-shot's fixed cost and efficiency where calibrated, SeqParallelTime's
// bytes.
func seqParallelTime(p hw.Profile, a comm.Algo, n int, bytes int64) (time.Duration, error) {
	if a != comm.OneShot {
		return 0, fmt.Errorf("perf: %s runs direct (oneshot), not %v", device.OpReduceScatterRMSNormAllGather, a)
	}
	if c := p.Calibration; c != nil && n > 1 {
		t, err := SeqParallelTime(n, bytes, 0, p.LinkBytesPerSec*c.TwoShot.Efficiency)
		return c.TwoShot.Fixed + t, err
	}
	return SeqParallelTime(n, bytes, p.Alpha, p.LinkBytesPerSec)
}

// kernelTime is Fixed + coef·S/(β·eff): the bandwidth term is comm's α-β model with α = 0
// at the sustained bandwidth, so the coefficients are comm's.
func kernelTime(k hw.KernelCost, p hw.Profile, gather bool, a comm.Algo, n int, bytes int64) (time.Duration, error) {
	move := ModelTime
	if gather {
		move = AllGatherTime
	}
	t, err := move(a, n, bytes, 0, p.LinkBytesPerSec*k.Efficiency)
	return k.Fixed + t, err
}

// peerKernelTime prices an all-reduce the calibration does not cover, a kernel over the
// peer buffers, with one-shot's calibrated kernel k: Fixed scaled by its α-β steps over
// one-shot's, and its α-β bytes at k's sustained bandwidth. Priced with the idealised α
// and full bandwidth beside calibrated kernels, a slower schedule would look faster than
// one-shot. ok is false for an algorithm without an α-β shape.
func peerKernelTime(k hw.KernelCost, p hw.Profile, a comm.Algo, n int, bytes int64) (time.Duration, bool) {
	cost, ok := a.Cost()
	oneShot, _ := comm.OneShot.Cost()
	if !ok {
		return 0, false
	}
	t, err := ModelTime(a, n, bytes, 0, p.LinkBytesPerSec*k.Efficiency)
	if err != nil {
		return 0, false
	}
	return time.Duration(float64(k.Fixed)*cost.Steps(n)/oneShot.Steps(n)) + t, true
}

// ringTime is Base + steps·PerStep + coef·S/(β·eff) for a ring of n ranks (n ≥ 2).
func ringTime(r hw.RingCost, p hw.Profile, gather bool, n int, bytes int64) time.Duration {
	steps, move := 2*(n-1), ModelTime
	if gather {
		steps, move = n-1, AllGatherTime
	}
	t, _ := move(comm.Ring, n, bytes, 0, p.LinkBytesPerSec*r.Efficiency) // cannot fail: n ≥ 2, β > 0
	return r.Base + time.Duration(steps)*r.PerStep + t
}

// treeTime prices tpslice's double binary tree with the ring's estimate, which has no
// published point either: Base + 2⌊log2 n⌋·PerStep (up and down each tree level) +
// 2·S/(β·eff), the shape of comm's α-β tree formula. Priced with the idealised α and full
// bandwidth beside calibrated kernels, the tree would win every large message on paper.
func treeTime(r hw.RingCost, p hw.Profile, n int, bytes int64) (time.Duration, error) {
	t, err := ModelTime(comm.Tree, n, bytes, 0, p.LinkBytesPerSec*r.Efficiency)
	return r.Base + time.Duration(2*comm.TreeDepth(n))*r.PerStep + t, err
}

// NCCLTime is NCCL's ring time for one op of bytes per rank over n ranks on profile p with
// protocol proto. On a profile without a Calibration only LL is modelled (with NCCL's tuner
// constants); ok is false for the other protocols there. The sequence-parallel all-reduce
// + RMSNorm is NCCL's reduce-scatter of the slices, then its all-gather of twice as much
// (a norm kernel between them is the graph's, not priced here).
func NCCLTime(p hw.Profile, op device.CollectiveOp, proto comm.Proto, n int, bytes int64) (d time.Duration, ok bool) {
	if op == device.OpReduceScatterRMSNormAllGather && n > 1 {
		slice := bytes / int64(n)
		rs, ok := NCCLTime(p, device.OpReduceScatter, proto, n, slice)
		ag, _ := NCCLTime(p, device.OpAllGather, proto, n, 2*slice)
		return rs + ag, ok
	}
	gather := scatterGather(op)
	switch c := p.Calibration; {
	case n <= 1:
		return 0, proto == comm.LL || c != nil
	case c == nil:
		return ncclTunerLL(p, gather, n, bytes), proto == comm.LL
	case proto == comm.LL:
		return ringTime(c.LL, p, gather, n, bytes), true
	case proto == comm.LL128:
		return ringTime(c.LL128, p, gather, n, bytes), true
	case proto == comm.Simple:
		return ringTime(c.Simple, p, gather, n, bytes), true
	}
	return 0, false
}

// NCCLFastest is NCCL's time with the protocol its tuner picks: the fastest one the profile
// models.
func NCCLFastest(p hw.Profile, op device.CollectiveOp, n int, bytes int64) (time.Duration, comm.Proto) {
	best, bestProto := time.Duration(math.MaxInt64), comm.LL
	for _, proto := range comm.Protos {
		if d, ok := NCCLTime(p, op, proto, n, bytes); ok && d < best {
			best, bestProto = d, proto
		}
	}
	return best, bestProto
}

// ncclTunerLL is NCCL's tuner's own time for one ring/LL call.
func ncclTunerLL(p hw.Profile, gather bool, n int, bytes int64) time.Duration {
	nf := float64(n)
	steps := 2 * (nf - 1)
	if gather {
		steps = nf - 1
	}
	hop := ncclRingLLHopNVLink
	if p.Fabric == device.PCIe {
		hop = ncclRingLLHopPCIe
	}
	algBW := p.LinkBytesPerSec * ncclLLBusBWFraction * nf / steps
	return ncclRingLLBase + time.Duration(steps)*hop + seconds(float64(bytes)/algBW)
}

// Offered is the tpslice algorithms profile p offers at world size n (comm.Offered), in
// comm.Algos order.
func Offered(p hw.Profile, n int) []comm.Algo {
	offered := comm.Offered(p.Fabric, p.NVLS, max(n, 1))
	var algos []comm.Algo
	for _, a := range comm.Algos {
		if slices.Contains(offered, a) {
			algos = append(algos, a)
		}
	}
	return algos
}

// fastest is the offered algorithm and protocol with the lowest CollectiveTimeProto for
// an all-reduce of bytes; ties go to the earlier one in comm.Algos order, and between
// protocols to Simple, then LL, then LL128.
func fastest(p hw.Profile, n int, bytes int64) comm.Choice {
	var best comm.Choice
	bestT := time.Duration(math.MaxInt64)
	for _, a := range Offered(p, n) {
		protos := []comm.Proto{comm.ProtoAuto}
		if comm.TakesProto(a) {
			protos = []comm.Proto{comm.Simple, comm.LL, comm.LL128}
		}
		for _, proto := range protos {
			ch := comm.Choice{Algo: a, Proto: proto}
			if t, err := CollectiveTimeProto(p, device.OpAllReduce, ch, n, bytes); err == nil && t < bestT {
				best, bestT = ch, t
			}
		}
	}
	return best
}

// ModelTable is the selection table this model gives profile p: for each world size in
// worlds and each size bucket up to maxBytes' bucket, the offered algorithm and protocol
// with the lowest CollectiveTimeProto at the bucket's upper bound. On a profile without a
// Calibration it is the α-β model's (idealTable), which keeps Simple.
func ModelTable(p hw.Profile, worlds []int, maxBytes int64) *comm.Table {
	if p.Calibration == nil {
		return idealTable(p, worlds, maxBytes)
	}
	t := &comm.Table{Source: "model:" + p.Name}
	for _, n := range worlds {
		for b := 0; n >= 1 && b <= comm.Bucket(maxBytes); b++ {
			_ = t.SetChoice(n, b, fastest(p, n, comm.BucketBytes(b))) // cannot fail: n ≥ 1, b in range, a real choice; repeats replace
		}
	}
	return t
}
