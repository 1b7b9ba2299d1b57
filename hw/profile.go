package hw

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tpslice/tpslice/device"
)

// Profile is one GPU node as the performance model sees it. Bandwidths are in bytes per
// second, sizes in bytes (decimal units, as the datasheets state them).
type Profile struct {
	// Name is the profile's canonical name, as Lookup accepts it ("h100-sxm").
	Name string
	// GPU names the GPU model in words, for reports.
	GPU string
	// SMs is the number of streaming multiprocessors per GPU.
	SMs int
	// HBMBytesPerSec is the peak device-memory bandwidth of one GPU.
	HBMBytesPerSec float64
	// MemoryBytes is the device memory of one GPU, as the datasheet states it (decimal GB;
	// nvidia-smi usually reports a little more, so this errs on the safe side).
	MemoryBytes int64
	// LinkBytesPerSec is β of the α-β model: the GPU-to-GPU bandwidth of one GPU, per
	// direction (half the bidirectional figure datasheets print).
	LinkBytesPerSec float64
	// Alpha is α of the α-β model: the cost of one synchronised step of a collective
	// (kernel-side flag barrier plus its share of launch), independent of message size.
	Alpha time.Duration
	// Fabric is how the node's GPUs are connected.
	Fabric device.Fabric
	// NVLS reports whether the fabric offers switch-side reduction (NVLink SHARP through
	// multicast objects). It implies Fabric.HasMulticast().
	NVLS bool
	// LaunchEager is the cost of one eagerly launched kernel (host API call and dispatch).
	LaunchEager time.Duration
	// LaunchGraph is the cost of one kernel node when a captured graph is replayed.
	LaunchGraph time.Duration
	// KernelFixed is what every kernel costs on the GPU beyond its bytes over bandwidth:
	// filling the SMs with blocks, the first DRAM round trip and the tail wave.
	KernelFixed time.Duration
	// DenseBF16FLOPS is the peak dense BF16 tensor-core rate of one GPU (FLOP/s; the
	// datasheets' "with sparsity" figure halved).
	DenseBF16FLOPS float64
	// Calibration prices the collectives from published measurements (perf uses it); nil
	// leaves them to the idealised α-β model of Alpha and LinkBytesPerSec, which comm's
	// cost model is. Alpha and LinkBytesPerSec stay set either way.
	Calibration *Calibration
	// InterHost is the network between hosts when a TP group spans several of these
	// nodes, as one GPU sees it; zero where the profile describes no such network.
	InterHost Link
}

// Link is a network between hosts as one GPU sees it: rail-optimised, every GPU behind its
// own NIC (as on DGX/HGX systems), so each GPU has the NIC's bandwidth to itself.
type Link struct {
	// BytesPerSec is one NIC's bandwidth per direction.
	BytesPerSec float64
	// Latency is one exchange across the network: a small RDMA write and its flag, from
	// one GPU's memory to another's on another host.
	Latency time.Duration
}

// Network reports whether the link is set.
func (l Link) Network() bool { return l.BytesPerSec > 0 }

// Validate reports the first field of p that the model cannot use, naming the profile and
// the field.
func (p Profile) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("hw: profile %q: %s = %v, want %s", p.Name, field, v, want)
	}
	switch {
	case p.Name == "":
		return errors.New("hw: profile has no name")
	case p.SMs <= 0:
		return bad("SMs", p.SMs, "> 0")
	case !positive(p.HBMBytesPerSec):
		return bad("HBMBytesPerSec", p.HBMBytesPerSec, "a finite value > 0")
	case p.MemoryBytes <= 0:
		return bad("MemoryBytes", p.MemoryBytes, "> 0")
	case !positive(p.LinkBytesPerSec):
		return bad("LinkBytesPerSec", p.LinkBytesPerSec, "a finite value > 0")
	case p.Alpha < 0:
		return bad("Alpha", p.Alpha, ">= 0")
	case p.LaunchEager < 0:
		return bad("LaunchEager", p.LaunchEager, ">= 0")
	case p.LaunchGraph < 0:
		return bad("LaunchGraph", p.LaunchGraph, ">= 0")
	case p.KernelFixed < 0:
		return bad("KernelFixed", p.KernelFixed, ">= 0")
	case !positive(p.DenseBF16FLOPS):
		return bad("DenseBF16FLOPS", p.DenseBF16FLOPS, "a finite value > 0")
	}
	if l := p.InterHost; l != (Link{}) && (!positive(l.BytesPerSec) || l.Latency < 0) {
		return bad("InterHost", fmt.Sprintf("%+v", l), "zero, or BytesPerSec > 0 and Latency ≥ 0")
	}
	if p.Calibration != nil {
		if err := p.Calibration.Validate(); err != nil {
			return fmt.Errorf("hw: profile %q: Calibration.%w", p.Name, err)
		}
	}
	if _, err := device.ParseFabric(p.Fabric.String()); err != nil {
		return fmt.Errorf("hw: profile %q: Fabric: %w", p.Name, err)
	}
	if p.NVLS && !p.Fabric.HasMulticast() {
		return fmt.Errorf("hw: profile %q: NVLS needs a multicast fabric, got %v", p.Name, p.Fabric)
	}
	return nil
}

func positive(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// Launch costs are properties of the host, driver and runtime more than of the GPU, so every
// profile shares them.
const (
	// launchEager is an estimate: a host-side cudaLaunchKernel plus dispatch is commonly
	// measured at 2–6 µs per kernel on current drivers; 4 µs is the middle of that range.
	launchEager = 4 * time.Microsecond
	// launchGraph is an estimate: NVIDIA's "Getting Started with CUDA Graphs" blog example
	// shows graph replay cutting the launch share of a short kernel to about 0.5 µs per
	// kernel node.
	launchGraph = 500 * time.Nanosecond
	// kernelFixed is an estimate: a memory-bound kernel needs about one DRAM latency
	// (≈ 0.5–1 µs on HBM) before its loads stream, and its last wave of blocks leaves SMs
	// idle; back-to-back small kernels in a replayed graph are commonly seen at 2–3 µs
	// each, of which launchGraph is the launch.
	kernelFixed = 2 * time.Microsecond
)

// NVLink-class α values. alphaNVLink is the value the project's source material uses for
// H100 (DESIGN.md's α-β table: α = 1.5 µs); it is itself a model parameter, not a datasheet
// figure. Autotuning replaces the model's choices with measurements.
const alphaNVLink = 1500 * time.Nanosecond

// alphaPCIe is an estimate: a flag barrier over PCIe goes through the PCIe switch or root
// complex, and NCCL's tuning model (src/graph/tuning.cc, hwLat) gives a PCI hop about twice
// the latency of an NVLink hop for its low-latency protocol, so α is twice alphaNVLink.
const alphaPCIe = 2 * alphaNVLink

// InfiniBand between hosts, one NIC per GPU (DGX/HGX H100, H200 and B200 ship eight
// ConnectX-7 400 Gb/s ports for eight GPUs; DGX A100 eight ConnectX-6 200 Gb/s ones).
// Bandwidths are the line rates per direction; what RDMA writes sustain is a little lower,
// so the model errs on the side of TP across hosts.
const (
	// ibNDR is InfiniBand NDR, 400 Gb/s per port: 50 GB/s per direction.
	ibNDR = 50e9
	// ibHDR is InfiniBand HDR, 200 Gb/s per port: 25 GB/s per direction.
	ibHDR = 25e9
	// ibLatency is one exchange across the network: NCCL's tuning model gives a ring step
	// over the network (NVIDIA/nccl src/graph/tuning.cc, hwLat[NCCL_HW_NET], ring) 2.7 µs
	// with its LL protocol — a small message whose flag travels with its data, what the
	// latency-bound exchanges of decode come down to (4.0 µs with LL128, 9.6 µs Simple).
	ibLatency = 2700 * time.Nanosecond
)

// pcieGen4x16 is PCIe Gen4 x16 per direction: the datasheets' 64 GB/s bidirectional,
// halved. This is the theoretical rate; measured peer-to-peer copies reach less
// (typically 20–26 GB/s), which autotuning picks up.
const pcieGen4x16 = 32e9

// profiles builds the fixed list afresh on every call, so no caller can change another's.
func profiles() []Profile {
	return []Profile{
		{
			Name: "h100-sxm",
			GPU:  "NVIDIA H100 SXM5 80GB",
			// NVIDIA H100 Tensor Core GPU Architecture whitepaper: H100 SXM5 has 132 SMs.
			SMs: 132,
			// NVIDIA H100 datasheet (SXM): BF16 Tensor Core 1,979 TFLOPS with sparsity.
			DenseBF16FLOPS: 989.5e12,
			// NVIDIA H100 Tensor Core GPU datasheet (SXM): 3.35 TB/s HBM3.
			HBMBytesPerSec: 3.35e12,
			// NVIDIA H100 datasheet (SXM): 80 GB.
			MemoryBytes: 80e9,
			// NVIDIA H100 datasheet (SXM): NVLink 900 GB/s bidirectional → 450 GB/s per direction.
			LinkBytesPerSec: 450e9,
			// DESIGN.md's α-β table (project source material).
			Alpha: alphaNVLink,
			// HGX H100: third-generation NVSwitch with NVLink SHARP (multicast, NVLS).
			Fabric:      device.NVSwitch,
			NVLS:        true,
			LaunchEager: launchEager,
			LaunchGraph: launchGraph,
			KernelFixed: kernelFixed,
			// Fitted to published 4×H100 and 8×H100 measurements (see hopperNVLink).
			Calibration: withBasis(hopperNVLink, hopperNVLink.Basis),
			InterHost:   Link{BytesPerSec: ibNDR, Latency: ibLatency},
		},
		{
			Name: "h200",
			GPU:  "NVIDIA H200 SXM 141GB",
			// Same GH100 configuration as H100 SXM5: 132 SMs (DESIGN.md's hardware list).
			SMs: 132,
			// NVIDIA H200 datasheet (SXM): BF16 Tensor Core 1,979 TFLOPS with sparsity.
			DenseBF16FLOPS: 989.5e12,
			// NVIDIA H200 Tensor Core GPU datasheet (SXM): 4.8 TB/s HBM3e.
			HBMBytesPerSec: 4.8e12,
			// NVIDIA H200 datasheet (SXM): 141 GB.
			MemoryBytes: 141e9,
			// NVIDIA H200 datasheet (SXM): NVLink 900 GB/s bidirectional → 450 GB/s per direction.
			LinkBytesPerSec: 450e9,
			// Estimate: same NVLink 4 / NVSwitch gen 3 fabric as H100, so H100's α.
			Alpha: alphaNVLink,
			// HGX H200: third-generation NVSwitch with NVLink SHARP.
			Fabric:      device.NVSwitch,
			NVLS:        true,
			LaunchEager: launchEager,
			LaunchGraph: launchGraph,
			KernelFixed: kernelFixed,
			// H200 shares H100's fabric (NVLink 4, NVSwitch gen 3) at the same link rate, so
			// H100's calibration applies as it stands.
			Calibration: withBasis(hopperNVLink, "H100's calibration (same NVLink 4 / NVSwitch gen 3 fabric): "+hopperNVLink.Basis),
			InterHost:   Link{BytesPerSec: ibNDR, Latency: ibLatency},
		},
		{
			Name: "a100-sxm",
			GPU:  "NVIDIA A100 SXM4 80GB",
			// NVIDIA A100 Tensor Core GPU Architecture whitepaper: A100 has 108 SMs.
			SMs: 108,
			// NVIDIA A100 datasheet: BF16 Tensor Core 312 TFLOPS (624 with sparsity).
			DenseBF16FLOPS: 312e12,
			// NVIDIA A100 Tensor Core GPU datasheet (80GB SXM): 2,039 GB/s HBM2e.
			HBMBytesPerSec: 2.039e12,
			// NVIDIA A100 datasheet (80GB SXM): 80 GB.
			MemoryBytes: 80e9,
			// NVIDIA A100 datasheet (SXM): NVLink 600 GB/s bidirectional → 300 GB/s per direction.
			LinkBytesPerSec: 300e9,
			// Estimate: no published per-step figure. NCCL's tuning model uses one NVLink hop
			// latency for Volta through Hopper, so the model keeps H100's α.
			Alpha: alphaNVLink,
			// HGX A100 connects all GPUs through second-generation NVSwitch, which has no
			// multicast (NVLink SHARP arrived with gen 3). device.Fabric classifies by what
			// the fabric offers, so this is all-to-all NVLink without multicast.
			Fabric:      device.NVLinkMesh,
			NVLS:        false,
			LaunchEager: launchEager,
			LaunchGraph: launchGraph,
			KernelFixed: kernelFixed,
			// Estimate: no published per-algorithm points here. H100's fixed costs and
			// efficiencies, over A100's own link rate.
			Calibration: withBasis(hopperNVLink, "estimate: H100's fixed costs and efficiencies at NVLink 3's 300 GB/s"),
			InterHost:   Link{BytesPerSec: ibHDR, Latency: ibLatency},
		},
		{
			Name: "b200",
			GPU:  "NVIDIA B200 (HGX B200) 180GB",
			// Not in NVIDIA's B200 spec sheets; 148 is cudaDeviceProp.multiProcessorCount as
			// reported on B200.
			SMs: 148,
			// NVIDIA HGX B200 spec: FP16/BF16 Tensor Core 36 PFLOPS with sparsity for 8
			// GPUs → 4.5 per GPU, 2.25 dense.
			DenseBF16FLOPS: 2.25e15,
			// NVIDIA DGX/HGX B200 spec: 64 TB/s HBM3e for 8 GPUs → 8 TB/s per GPU.
			HBMBytesPerSec: 8e12,
			// NVIDIA DGX/HGX B200 spec: 1,440 GB for 8 GPUs → 180 GB per GPU (the stacks hold
			// 192 GB; 180 GB is what the board exposes).
			MemoryBytes: 180e9,
			// NVIDIA HGX B200 spec: fifth-generation NVLink, 1.8 TB/s bidirectional per GPU →
			// 900 GB/s per direction.
			LinkBytesPerSec: 900e9,
			// Estimate: α is dominated by launch and the flag round trip through the switch,
			// not by link rate, and no per-step figure is published; keep H100's α.
			Alpha: alphaNVLink,
			// HGX B200: NVLink 5 switch with NVLink SHARP.
			Fabric:      device.NVSwitch,
			NVLS:        true,
			LaunchEager: launchEager,
			LaunchGraph: launchGraph,
			KernelFixed: kernelFixed,
			// Estimate: no published per-algorithm points here. H100's fixed costs and
			// efficiencies, over B200's own link rate.
			Calibration: withBasis(hopperNVLink, "estimate: H100's fixed costs and efficiencies at NVLink 5's 900 GB/s"),
			InterHost:   Link{BytesPerSec: ibNDR, Latency: ibLatency},
		},
		{
			Name: "l40s-pcie",
			GPU:  "NVIDIA L40S 48GB (PCIe)",
			// NVIDIA L40S datasheet: 18,176 CUDA cores; Ada has 128 per SM (NVIDIA Ada GPU
			// Architecture whitepaper) → 142 SMs.
			SMs: 142,
			// NVIDIA L40S datasheet: BF16 Tensor Core 362.05 TFLOPS (733 with sparsity).
			DenseBF16FLOPS: 362.05e12,
			// NVIDIA L40S datasheet: 864 GB/s GDDR6.
			HBMBytesPerSec: 864e9,
			// NVIDIA L40S datasheet: 48 GB GDDR6 with ECC.
			MemoryBytes: 48e9,
			// NVIDIA L40S datasheet: PCIe Gen4 x16, 64 GB/s bidirectional; no NVLink.
			LinkBytesPerSec: pcieGen4x16,
			// Estimate: see alphaPCIe.
			Alpha:       alphaPCIe,
			Fabric:      device.PCIe,
			NVLS:        false,
			LaunchEager: launchEager,
			LaunchGraph: launchGraph,
			KernelFixed: kernelFixed,
		},
		{
			Name: "pcie",
			// A generic PCIe Gen4 node. Its GPU numbers are NVIDIA A100 80GB PCIe's (a common
			// PCIe Gen4 data-centre card), used as a stand-in; no NVLink bridges.
			GPU: "generic PCIe Gen4 GPU (A100 80GB PCIe figures)",
			// NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs.
			SMs: 108,
			// NVIDIA A100 datasheet (PCIe): BF16 Tensor Core 312 TFLOPS (624 with sparsity).
			DenseBF16FLOPS: 312e12,
			// NVIDIA A100 Tensor Core GPU datasheet (80GB PCIe): 1,935 GB/s HBM2e.
			HBMBytesPerSec: 1.935e12,
			// NVIDIA A100 datasheet (80GB PCIe): 80 GB.
			MemoryBytes: 80e9,
			// NVIDIA A100 datasheet (PCIe): PCIe Gen4, 64 GB/s bidirectional.
			LinkBytesPerSec: pcieGen4x16,
			// Estimate: see alphaPCIe.
			Alpha:       alphaPCIe,
			Fabric:      device.PCIe,
			NVLS:        false,
			LaunchEager: launchEager,
			LaunchGraph: launchGraph,
			KernelFixed: kernelFixed,
		},
	}
}

// aliases maps other spellings to canonical profile names, in the order errors list them.
// It is never mutated.
var aliases = [...]struct{ alias, name string }{
	{"a100-sxm-80g", "a100-sxm"},
	{"a100", "a100-sxm"},
	{"h100", "h100-sxm"},
	{"h200-sxm", "h200"},
	{"b200-sxm", "b200"},
	{"l40s", "l40s-pcie"},
}

// Profiles returns every known profile in a fixed order: h100-sxm, h200, a100-sxm, b200,
// l40s-pcie, pcie. The slice is the caller's own.
func Profiles() []Profile { return profiles() }

// Names returns the canonical profile names in Profiles' order.
func Names() []string {
	ps := profiles()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// IdealSuffix, after a profile's name or alias, asks Lookup for the profile without its
// Calibration: the idealised α-β model (one α for every step, the full link bandwidth).
// "h100-sxm-ideal" is the seed's model of DESIGN.md's α-β table.
const IdealSuffix = "-ideal"

// Lookup returns the profile with the given name or alias (case and surrounding space do
// not matter; "a100-sxm-80g" is the A100 profile). A name ending in IdealSuffix gives that
// profile named so, with no Calibration. The error lists the known names.
func Lookup(name string) (Profile, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if base, ok := strings.CutSuffix(key, IdealSuffix); ok {
		p, err := Lookup(base)
		if err != nil {
			return Profile{}, err
		}
		p.Name, p.Calibration = p.Name+IdealSuffix, nil
		return p, nil
	}
	for _, a := range aliases {
		if a.alias == key {
			key = a.name
			break
		}
	}
	for _, p := range profiles() {
		if p.Name == key {
			return p, nil
		}
	}
	known := make([]string, 0, len(aliases))
	for _, a := range aliases {
		known = append(known, a.alias)
	}
	return Profile{}, fmt.Errorf("hw: unknown hardware profile %q (known: %s; aliases: %s)",
		name, strings.Join(Names(), ", "), strings.Join(known, ", "))
}
