package perf

import (
	"fmt"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/hw"
)

// protoCost is what a protocol changes in the price of tpslice's ring and tree: the
// fraction of the link's bandwidth that carries data, and each step's latency as a
// fraction of Simple's. Both come from NCCL's tuner (NVIDIA/nccl src/graph/tuning.cc):
//
//   - LL carries 4 data bytes in every 8-byte word, so half the bandwidth; its step is a
//     flag inside the data, no fence: tuning.cc's NVLink ring hwLat, 0.47 µs for LL
//     against 3.4 µs for Simple.
//   - LL128 carries 120 data bytes in every 128-byte line (tuning.cc's 120/128, which
//     it rounds to 0.92 for the ring); its step costs 1.9 µs against Simple's 3.4.
//
// NCCL's own tuner is harsher on LL's bandwidth (a quarter of Simple's for a ring
// all-reduce, 1/3.8 for the tree: the polling costs too); the model keeps the payload
// fraction, what the protocol itself gives up.
type protoCost struct {
	bandwidth, latency float64
}

func protoCostOf(p comm.Proto) protoCost {
	switch p {
	case comm.LL:
		return protoCost{bandwidth: 0.5, latency: 0.47 / 3.4}
	case comm.LL128:
		return protoCost{bandwidth: 120.0 / 128.0, latency: 1.9 / 3.4}
	}
	return protoCost{bandwidth: 1, latency: 1}
}

// ring scales a calibrated ring's per-step latency and efficiency by the protocol's; its
// base (the launch and the kernel's ramp) does not change.
func (pc protoCost) ring(r hw.RingCost) hw.RingCost {
	r.PerStep = time.Duration(float64(r.PerStep) * pc.latency)
	r.Efficiency *= pc.bandwidth
	return r
}

// ModelTimeProto is ModelTime for algorithm a under protocol proto. The ring's and the
// tree's bytes move at β·bw_P, and every step but the first costs α·lat_P (protoCostOf):
// the first keeps its whole α, the launch and first handshake, which no protocol removes.
//
//	ring/P   α + (2(n-1)-1)·α·lat_P + 2(n-1)/n · S/(β·bw_P)
//	tree/P   α + (2d-1)·α·lat_P + 2·S/(β·bw_P)
//
// Other algorithms take ProtoAuto or Simple only; anything else fails, naming it.
func ModelTimeProto(proto comm.Proto, a comm.Algo, n int, bytes int64, alpha time.Duration, beta float64) (time.Duration, error) {
	if proto == comm.ProtoAuto || proto == comm.Simple {
		return ModelTime(a, n, bytes, alpha, beta)
	}
	if !comm.TakesProto(a) || proto > comm.Simple {
		return 0, fmtProtoError(proto, a)
	}
	pc := protoCostOf(proto)
	d, err := ModelTime(a, n, bytes, time.Duration(float64(alpha)*pc.latency), beta*pc.bandwidth)
	if err != nil || n == 1 || a == comm.Tree && comm.TreeDepth(n) == 0 {
		return d, err
	}
	return d + time.Duration(float64(alpha)*(1-pc.latency)), nil
}

func fmtProtoError(proto comm.Proto, a comm.Algo) error {
	return fmt.Errorf("perf: α-β model has no time for %v under protocol %v (protocols apply to ring and tree)", a, proto)
}
