package perf

import (
	"time"

	"github.com/tpslice/tpslice/comm"
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

// scale is the rate of the ring or the tree under the protocol, from its Simple rate:
// bytes move at bw·bw_P and steps cost step·lat_P. A calibrated rate keeps its base (the
// launch and the kernel's ramp); the α-β model's first step keeps its whole α, the launch
// and first handshake, which no protocol removes:
//
//	ring/P   α + (2(n-1)-1)·α·lat_P + 2(n-1)/n · S/(β·bw_P)
//	tree/P   α + (2d-1)·α·lat_P + 2·S/(β·bw_P)
func (pc protoCost) scale(simple rate) rate {
	r := rate{base: simple.base, step: time.Duration(float64(simple.step) * pc.latency), bw: simple.bw * pc.bandwidth, idealised: simple.idealised}
	if simple.idealised {
		r.base = time.Duration(float64(simple.step) * (1 - pc.latency))
	}
	return r
}

// orSimple is p, with ProtoAuto as Simple: what tpslice's ring and tree run by default.
func orSimple(p comm.Proto) comm.Proto {
	if p == comm.ProtoAuto {
		return comm.Simple
	}
	return p
}
