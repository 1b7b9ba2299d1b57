package perf

import (
	"fmt"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// NCCL's ring, what engines that call torch.distributed run, priced beside tpslice's
// collectives: on a calibrated profile each protocol's RingCost (hw.Calibration's LL, LL128
// and Simple) over the ring's shape; without a calibration its tuner's own ring/LL
// constants below, the only protocol modelled there. A request without a protocol takes
// the fastest, as NCCL's tuner picks. The sequence-parallel all-reduce + RMSNorm is NCCL's
// reduce-scatter of the slices, then its all-gather of twice as much (a norm kernel
// between them is the graph's, not priced here).

// NCCL's tuner constants for the ring with the LL protocol (NVIDIA/nccl src/graph/tuning.cc,
// baseLat and hwLat): a base latency per call plus one hop per ring step; its bus bandwidth
// is a quarter of the link's. They price NCCL on a profile without a Calibration.
const (
	ncclRingLLBase      = 6600 * time.Nanosecond
	ncclRingLLHopNVLink = 600 * time.Nanosecond
	ncclRingLLHopPCIe   = 1000 * time.Nanosecond
	ncclLLBusBWFraction = 0.25
)

// ncclRates are NCCL's ring's rates on p, per protocol; LL alone, its tuner's, without a
// calibration.
func ncclRates(p hw.Profile) map[comm.Choice]rate {
	c, beta := p.Calibration, p.LinkBytesPerSec
	if c == nil {
		hop := ncclRingLLHopNVLink
		if p.Fabric == device.PCIe {
			hop = ncclRingLLHopPCIe
		}
		return map[comm.Choice]rate{{Algo: comm.Ring, Proto: comm.LL}: {base: ncclRingLLBase, step: hop, bw: beta * ncclLLBusBWFraction}}
	}
	ring := func(r hw.RingCost) rate { return rate{base: r.Base, step: r.PerStep, bw: beta * r.Efficiency} }
	return map[comm.Choice]rate{
		{Algo: comm.Ring, Proto: comm.LL}:     ring(c.LL),
		{Algo: comm.Ring, Proto: comm.LL128}:  ring(c.LL128),
		{Algo: comm.Ring, Proto: comm.Simple}: ring(c.Simple),
	}
}

// ncclTime prices c on NCCL's ring.
func (m Costs) ncclTime(c Collective) (time.Duration, error) {
	if c.Proto == comm.ProtoAuto {
		_, d, err := m.Choose(c)
		return d, err
	}
	r, ok := m.rates[comm.Choice{Algo: comm.Ring, Proto: c.Proto}]
	switch {
	case !ok:
		return 0, fmt.Errorf("perf: NCCL's ring under protocol %v is not modelled on %s (without a calibration, its tuner's LL only)", c.Proto, m.p.Name)
	case c.Ranks == 1:
		return 0, nil
	case c.Hosts > 1:
		return m.ncclAcrossHosts(c, r)
	case c.Op == device.OpReduceScatterRMSNormAllGather:
		slice := c.Bytes / int64(c.Ranks)
		rs, err := m.ncclTime(Collective{Op: device.OpReduceScatter, Proto: c.Proto, Ranks: c.Ranks, Bytes: slice})
		ag, _ := m.ncclTime(Collective{Op: device.OpAllGather, Proto: c.Proto, Ranks: c.Ranks, Bytes: 2 * slice})
		return rs + ag, err
	case m.p.Calibration == nil:
		return ncclTunerLL(r, scatterGather(c.Op), c.Ranks, c.Bytes), nil
	}
	shape, _ := comm.Ring.Cost()
	if scatterGather(c.Op) {
		shape = gatherShapes[comm.Ring]
	}
	d, _ := r.at(shape, c.Ranks, float64(c.Bytes))
	return d, nil
}

// ncclTunerLL is NCCL's tuner's own time for one ring/LL call, at its algorithm bandwidth
// busBw·n/steps.
func ncclTunerLL(r rate, gather bool, n int, bytes int64) time.Duration {
	nf := float64(n)
	steps := 2 * (nf - 1)
	if gather {
		steps = nf - 1
	}
	algBW := r.bw * nf / steps
	return r.base + time.Duration(steps)*r.step + seconds(float64(bytes)/algBW)
}

// scatterGather reports whether op is priced as an all-gather: n-1 slices per rank.
func scatterGather(op device.CollectiveOp) bool {
	return op == device.OpAllGather || op == device.OpReduceScatter
}
