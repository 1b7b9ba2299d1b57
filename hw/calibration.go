package hw

import (
	"fmt"
	"time"
)

// Calibration is what a profile's collectives cost, fitted to published measurements
// rather than derived from one α for every step. Bandwidths are fractions of the profile's
// LinkBytesPerSec, so a calibration carries over to a profile with another link rate.
type Calibration struct {
	// Basis says where the constants come from, for reports: the measurements they were
	// fitted to, or "estimate: …" where none were published for this GPU.
	Basis string
	// OneShot, TwoShot and NVLS are tpslice's own peer-buffer kernels (vLLM's custom
	// all-reduce class): a fixed cost per call and the fraction of the link they sustain.
	OneShot, TwoShot, NVLS KernelCost
	// Ring is tpslice's ring over registered peer buffers.
	Ring RingCost
	// LL, LL128 and Simple are NCCL's ring with each of its protocols, as torch.distributed
	// runs it; NCCL's tuner picks the fastest per call.
	LL, LL128, Simple RingCost
}

// KernelCost prices a peer-buffer all-reduce kernel: Fixed + coef·S / (β·Efficiency), with
// coef the algorithm's bytes moved per byte of message (one-shot n-1, two-shot 2(n-1)/n,
// NVLS 1). Fixed covers the launch share, both barriers and the kernel's ramp; it does not
// grow with n in this model (the measurements are at one n).
type KernelCost struct {
	Fixed      time.Duration
	Efficiency float64
}

// RingCost prices a ring all-reduce in NCCL tuner's shape (NVIDIA/nccl src/graph/tuning.cc:
// a base latency per call, a hardware latency per ring step, and a bus bandwidth per
// protocol): Base + steps·PerStep + coef·S / (β·Efficiency), with 2(n-1) steps and coef
// 2(n-1)/n for an all-reduce, n-1 steps and coef n-1 for an all-gather. β·Efficiency is
// thus the bus bandwidth nccl-tests reports.
type RingCost struct {
	Base, PerStep time.Duration
	Efficiency    float64
}

func (k KernelCost) validate(field string) error {
	if k.Fixed < 0 || !(k.Efficiency > 0 && k.Efficiency <= 1) {
		return fmt.Errorf("%s = %+v, want Fixed ≥ 0 and 0 < Efficiency ≤ 1", field, k)
	}
	return nil
}

func (r RingCost) validate(field string) error {
	if r.Base < 0 || r.PerStep < 0 || !(r.Efficiency > 0 && r.Efficiency <= 1) {
		return fmt.Errorf("%s = %+v, want Base, PerStep ≥ 0 and 0 < Efficiency ≤ 1", field, r)
	}
	return nil
}

// Validate reports the first constant the model cannot use, naming it.
func (c *Calibration) Validate() error {
	for _, k := range []struct {
		name string
		cost KernelCost
	}{{"OneShot", c.OneShot}, {"TwoShot", c.TwoShot}, {"NVLS", c.NVLS}} {
		if err := k.cost.validate(k.name); err != nil {
			return err
		}
	}
	for _, r := range []struct {
		name string
		cost RingCost
	}{{"Ring", c.Ring}, {"LL", c.LL}, {"LL128", c.LL128}, {"Simple", c.Simple}} {
		if err := r.cost.validate(r.name); err != nil {
			return err
		}
	}
	return nil
}

// hopperNVLink is the calibration of NVLink 4 through third-generation NVSwitch (HGX H100),
// fitted by hand to two published sets of measurements, sizes read as binary units
// (0.5 MB = 512 KiB):
//
//   - vLLM PR #24111 (vllm-project/vllm), 4×H100, bf16, ms per op at 0.5 / 1 / 2 / 4 MB:
//     custom one-stage (one-shot) 0.010 / 0.015 / 0.022 / 0.038, custom two-stage
//     (two-shot) 0.017 / 0.018 / 0.027 / 0.043, NCCL 0.017 / 0.019 / 0.026 / 0.037.
//   - Triton-distributed issue #57 (ByteDance-Seed/Triton-distributed), 8×H100, NCCL
//     all-reduce through torch.distributed, µs: 128 B 19.19, 16 KB 20.71, 64 KB 23.05,
//     256 KB 24.76, 1 MB 32.42, 4 MB 59.43, 8 MB 90.51, 16 MB 135.68.
//
// Each constant below names the points that determine it; the others are held out, and
// perf's TestCalibration checks all of them within ±20%.
var hopperNVLink = Calibration{
	Basis: "fitted to vLLM PR #24111 (4×H100) and Triton-distributed issue #57 (8×H100)",
	// One-shot: from 0.5 MB (10 µs) and 4 MB (38 µs) at n = 4; held out: 1 and 2 MB.
	// 6.0 µs fixed, 0.874 of 450 GB/s (393 GB/s).
	OneShot: KernelCost{Fixed: 6000 * time.Nanosecond, Efficiency: 0.874},
	// Two-shot: from 0.5 MB (17 µs) and 4 MB (43 µs) at n = 4; held out: 1 and 2 MB.
	TwoShot: KernelCost{Fixed: 13300 * time.Nanosecond, Efficiency: 0.47},
	// NVLS: estimate, no published point here. Two barriers like one-shot, so one-shot's
	// fixed cost and efficiency, over its single pass of S.
	NVLS: KernelCost{Fixed: 6000 * time.Nanosecond, Efficiency: 0.874},
	// tpslice's ring: estimate, no published point. One-shot's fixed cost for the launch
	// and ramp, then NCCL Simple's per-step latency and bus efficiency (the same bulk copy
	// and flag per step). Simple's own 1.1 µs base would make a 2-rank ring cheaper than
	// one-shot, which no published custom all-reduce shows.
	Ring: RingCost{Base: 6000 * time.Nanosecond, PerStep: 2350 * time.Nanosecond, Efficiency: 0.642},
	// NCCL LL: PerStep is NCCL's own hwLat for a ring LL step over NVLink (0.6 µs in
	// tuning.cc), not fitted; Base from 128 B at n = 8 (19.19 µs, 14 steps), Efficiency from
	// 64 KB at n = 8 (23.05 µs): a 29.7 GB/s bus. Held out: 16 KB at n = 8.
	LL: RingCost{Base: 10800 * time.Nanosecond, PerStep: 600 * time.Nanosecond, Efficiency: 0.066},
	// NCCL LL128: from 256 KB and 1 MB at n = 8 (24.76, 32.42 µs: 22.2 µs fixed, a 180 GB/s
	// bus) and 0.5 MB at n = 4 (17 µs: 12.6 µs fixed). Held out: 64 KB at n = 8 and 1 MB at
	// n = 4.
	LL128: RingCost{Base: 5400 * time.Nanosecond, PerStep: 1200 * time.Nanosecond, Efficiency: 0.40},
	// NCCL Simple: from 4 and 16 MB at n = 8 (59.43, 135.68 µs: 34.0 µs fixed, a 289 GB/s
	// bus) and 4 MB at n = 4 (37 µs: 15.2 µs fixed). Held out: 8 MB at n = 8, 2 MB at n = 4.
	Simple: RingCost{Base: 1100 * time.Nanosecond, PerStep: 2350 * time.Nanosecond, Efficiency: 0.642},
}

// withBasis returns a copy of base with basis as its Basis. A GPU without published points
// takes another fabric's fixed costs and efficiencies this way, so that its times scale
// with its own link rate.
func withBasis(base Calibration, basis string) *Calibration {
	base.Basis = basis
	return &base
}
