package perf

import (
	"fmt"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// The roofline's stated efficiencies. Both are estimates, not measurements of a GPU here.
const (
	// MemoryEfficiency is the fraction of peak device-memory bandwidth a streaming kernel
	// sustains. STREAM-style copies reach 85–90% of peak on A100 and H100; decode GEMVs,
	// with short rows and one pass, reach less, so 80%.
	MemoryEfficiency = 0.80
	// ComputeEfficiency is the fraction of dense BF16 tensor-core peak a GEMM sustains.
	// cuBLAS reaches 70–80% on large GEMMs; decode batches are far from large, so 60%.
	ComputeEfficiency = 0.60
)

// Collectives names whose all-reduce implementation a prediction prices.
type Collectives uint8

const (
	// TPSlice prices tpslice's own collectives (one-shot, two-shot, NVLS, ring over
	// registered peer buffers, as vLLM's and TensorRT-LLM's custom all-reduce): the
	// profile's calibration, or the α-β model without one.
	TPSlice Collectives = iota
	// NCCL prices NCCL's ring with the fastest of its protocols (LL, LL128, Simple), as
	// NCCL's own tuner picks: what engines that call torch.distributed (gpt-fast, for one)
	// run. The algorithm the graph records is then always ring.
	NCCL
)

// String returns "tpslice" or "nccl", the names ParseCollectives reads.
func (c Collectives) String() string {
	if c == NCCL {
		return "nccl"
	}
	return "tpslice"
}

// ParseCollectives reads "tpslice" or "nccl".
func ParseCollectives(s string) (Collectives, error) {
	switch s {
	case "tpslice", "":
		return TPSlice, nil
	case "nccl":
		return NCCL, nil
	}
	return 0, fmt.Errorf("perf: unknown collectives %q (want tpslice or nccl)", s)
}

// pricer prices kernels on one profile for one world size.
type pricer struct {
	p       hw.Profile
	world   int
	hosts   int // the world spans this many hosts; 0 or 1: one
	context int64
	eager   bool
	costs   Costs // the collectives' costs on p: tpslice's or NCCL's
}

// kernel is what one kernel costs on the GPU, launch included: with graphs a replayed
// node adds LaunchGraph to its run; launched eagerly, the host issues ahead of the GPU,
// so a kernel costs its run or its launch, whichever is longer.
func (pr pricer) kernel(w device.Work) (time.Duration, error) {
	run := pr.roofline(w) + pr.p.KernelFixed
	if w.Class == device.ClassCollective {
		var err error
		if run, err = pr.collective(w); err != nil {
			return 0, err
		}
	}
	if pr.eager {
		return max(run, pr.p.LaunchEager), nil
	}
	return run + pr.p.LaunchGraph, nil
}

// roofline is a compute kernel's run: its bytes at the sustained memory bandwidth or its
// FLOPs at the sustained tensor rate, whichever takes longer; attention adds its work per
// cached position.
func (pr pricer) roofline(w device.Work) time.Duration {
	bytes := float64(w.Bytes + pr.context*w.ContextBytes)
	flops := float64(w.FLOPs + pr.context*w.ContextFLOPs)
	mem := bytes / (pr.p.HBMBytesPerSec * MemoryEfficiency)
	compute := flops / (pr.p.DenseBF16FLOPS * ComputeEfficiency)
	return seconds(max(mem, compute))
}

// collective is a collective kernel's run: the exchange as the chosen implementation
// prices it (Costs.Time; NCCL's ring with its fastest protocol), plus the kernel's own
// memory traffic (a fused norm's residual and output).
func (pr pricer) collective(w device.Work) (time.Duration, error) {
	local := seconds(float64(w.Bytes) / (pr.p.HBMBytesPerSec * MemoryEfficiency))
	c := Collective{Op: w.Op, Ranks: pr.world, Hosts: pr.hosts, Bytes: w.Message}
	if pr.costs.impl == TPSlice {
		var ok bool
		if c.Algo, ok = w.Algo.(comm.Algo); !ok {
			return 0, fmt.Errorf("perf: collective %s: algorithm %v is not a comm.Algo", w.Op, w.Algo)
		}
		c.Proto, _ = w.Proto.(comm.Proto) // nil: the algorithm's default
	}
	t, err := pr.costs.Time(c)
	return t + local, err
}

func seconds(s float64) time.Duration { return time.Duration(s * 1e9) }
