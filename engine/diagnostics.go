package engine

import (
	"fmt"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/diag"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/fused"
)

// logStartup writes what NCCL_DEBUG=INFO would tell of a communicator and what vLLM logs
// of its CUDA graphs: the group's topology and the model on it (INIT), the all-reduce the
// selector picks per message-size bucket and the fused variant per token bucket (TUNING),
// each captured decode graph (GRAPH) and the algorithm of every collective call site of a
// decode step (COLL). After the n-th
// rebuild of the TP group (rebuild = n > 0) it logs the new group the same way, each line
// beginning "rebuild n: ".
func (e *Engine) logStartup(rebuild int) {
	d := e.cfg.Debug
	if d == nil {
		return
	}
	mark := ""
	if rebuild > 0 {
		mark = fmt.Sprintf("rebuild %d: ", rebuild)
	}
	if e.group == nil {
		d.Infof(diag.Init, "%sTP group of %d worker processes (pids %v), every step eager", mark, e.cfg.TP, e.model.(interface{ Pids() []int }).Pids())
		return
	}
	g, c, mc, opt := e.group, e.group.Comm(), e.model.Config(), e.model.Options()
	d.Infof(diag.Init, "%sTP group of %d ranks on %v, %d SMs per device, NVLS %v, overlap %v, all-reduce wire %v", mark,
		g.World(), c.Fabric(), g.Device(0).NumSMs(), c.HasNVLS(), opt.Overlap, c.Wire())
	e.logPlacement(mark)
	arch := mc.Arch
	if arch == "" {
		arch = "llama"
	}
	d.Infof(diag.Init, "%smodel %s (%s): %d layers, hidden %d, %d heads / %d KV heads, FFN %d, vocab %d, weights %s, bytes per rank %v", mark,
		mc.Name, arch, mc.Layers, mc.Hidden, mc.Heads, mc.KVHeads, mc.Intermediate, mc.Vocab, orStored(opt.WeightDType), e.model.WeightBytes())
	kv := dtype.F32
	if opt.KVDType != 0 {
		kv = opt.KVDType
	}
	d.Infof(diag.Init, "%sKV cache: %d blocks of %d tokens (%v); at most %d running, %d waiting, %d tokens per step", mark,
		opt.KVBlocks, opt.BlockSize, kv, e.cfg.MaxRunning, e.cfg.MaxWaiting, e.cfg.MaxBatchTokens)
	for b := comm.Bucket(256); b <= comm.Bucket(64<<20); b += 2 {
		bytes := comm.BucketBytes(b)
		d.Infof(diag.Tuning, "%sall-reduce of %d B at TP %d: %v", mark, bytes, g.World(), c.Pick(int(bytes)).Algo)
	}
	e.logFusedPicks(mark)
	for _, bucket := range e.graphs.Buckets {
		for k, graph := range e.decodeGraphs[bucket] {
			d.Infof(diag.Graph, "%sdecode graph for batch %d (%s): %d nodes per rank, %d collectives in place, captured in %v", mark,
				bucket, [2]string{"full logits", "greedy"}[k], graph.Nodes(), graph.InPlace, graph.CaptureTime)
		}
	}
	if len(e.graphs.Buckets) > 0 {
		graph := e.decodeGraphs[e.graphs.Buckets[0]][1].Graph(0)
		var sites []device.GraphNode
		for _, n := range graph.Nodes {
			if n.Kernel.Work.Class == device.ClassCollective {
				sites = append(sites, n)
			}
		}
		for i, n := range sites {
			w := n.Kernel.Work
			d.Infof(diag.Coll, "%sdecode batch %d, %s: %s %s, %d B per rank", mark,
				e.graphs.Buckets[0], siteName(i, len(sites), mc.Layers), w.Op, w.Algo, w.Message)
		}
	}
}

// logPlacement writes where each rank runs (INIT): its NUMA node and CPUs, whether it is
// pinned there, and the plan's notes.
func (e *Engine) logPlacement(mark string) {
	p, d := e.placement, e.cfg.Debug
	pinned := "pinned"
	if !p.Pinned {
		pinned = "not pinned"
	}
	d.Infof(diag.Init, "%sCPU placement (affinity %v): %s", mark, p.Affinity, pinned)
	for _, rc := range p.Ranks {
		d.Infof(diag.Init, "%srank %d: NUMA node %v, CPUs %v", mark, rc.Rank, rc.Nodes, rc.CPUs)
	}
	for _, n := range p.Notes {
		d.Infof(diag.Init, "%sCPU placement: %s", mark, n)
	}
}

// siteName names the i-th of n collectives of a decode step: the embedding's all-reduce,
// then each layer's o_proj and down_proj, then the sampling all-gather, when n says the
// step has that shape; otherwise only its index.
func siteName(i, n, layers int) string {
	switch {
	case n != 2*layers+2:
		return fmt.Sprintf("collective %d of %d", i, n)
	case i == 0:
		return "embedding"
	case i == n-1:
		return "sampling"
	case i%2 == 1:
		return fmt.Sprintf("layer %d attn.o_proj", (i-1)/2)
	}
	return fmt.Sprintf("layer %d mlp.down_proj", (i-1)/2)
}

func orStored(t dtype.DType) string {
	if t == 0 {
		return "as stored"
	}
	return t.String()
}

// logFusedPicks writes the fused all-reduce + residual + RMSNorm variant that a step of
// each token bucket (1, 2, 4, … up to the step's token budget) runs, and what chose it.
func (e *Engine) logFusedPicks(mark string) {
	m := e.model
	c, opt, hidden := e.group.Comm(), m.Options(), m.Config().Hidden
	why := "forced"
	switch {
	case opt.Fused != fused.Auto:
	case opt.FusedTable != nil:
		why = "table " + opt.FusedTable.Source
	default:
		why = "the fused form of the all-reduce pick"
	}
	for tokens := 1; ; tokens *= 2 {
		tokens = min(tokens, e.cfg.MaxBatchTokens)
		v := opt.Fused.Resolve(c, opt.FusedTable, tokens, hidden)
		e.cfg.Debug.Infof(diag.Tuning, "%sfused all-reduce + rmsnorm of %d tokens × %d at TP %d: %v (%s)", mark, tokens, hidden, c.Size(), v, why)
		if tokens == e.cfg.MaxBatchTokens {
			return
		}
	}
}
