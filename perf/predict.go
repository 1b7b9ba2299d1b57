package perf

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/tp"
)

// MemoryUtilization is the share of a GPU's memory the weights and KV cache may take:
// vLLM's default gpu_memory_utilization, leaving the rest to activations, the CUDA
// context and fragmentation.
const MemoryUtilization = 0.9

// MaxBatch bounds the decode batch a plan prices: the capture allocates real activations
// for it on this machine.
const MaxBatch = 1024

// Config is one plan to price: a model on TP GPUs of a profile, decoding Batch sequences
// that each attend to Context cached positions.
type Config struct {
	Profile hw.Profile
	Model   models.Config
	TP      int
	// Hosts is how many hosts of the profile the TP ranks span, evenly (TP/Hosts GPUs on
	// each, at most device.MaxDevices), joined by the profile's InterHost network; 0 means
	// one host.
	Hosts int
	Batch int
	// Context is the positions each sequence attends to (its prompt and what it generated
	// so far); 0 means 512, or the model's context length if shorter.
	Context int
	// WeightDType stores the weights; 0 means bf16.
	WeightDType dtype.DType
	// KVDType stores the KV cache; 0 means the weights' dtype (vLLM's kv_cache_dtype auto),
	// bf16 for quantized weights.
	KVDType dtype.DType
	// Fused and Algo are the engine's options (Auto: the selector decides per call site,
	// with ModelTable's table for the profile).
	Fused fused.Variant
	Algo  comm.Algo
	// Collectives chooses whose all-reduce is priced; NCCL forces the ring.
	Collectives Collectives
	// AllReduceWire is the engine's --allreduce-dtype (comm.Config.Wire): one-shot and
	// two-shot then declare, and are priced for, the bytes the wire carries. The encoding
	// itself runs in the kernel's registers on a GPU and is not priced.
	AllReduceWire comm.Wire
	// Eager prices host launches instead of graph replays.
	Eager bool
	// Overlap runs batches of two or more as two micro-batches, the collectives of one on a
	// comm stream while the other computes (the engine's --overlap). The model lets the
	// streams overlap as the graph's dependencies allow and does not charge compute for
	// the SMs the comm stream holds.
	Overlap bool
}

// Site is one collective call site of the step: the kernel whose output it reduces
// ("o_proj", "down_proj", "embedding", "topk"), what it runs, and its time per step.
type Site struct {
	After   string              `json:"after"`
	Op      device.CollectiveOp `json:"op"`
	Algo    string              `json:"algo"`
	Message int64               `json:"message_bytes"`
	Calls   int                 `json:"calls"`
	// Time is the site's calls together, launches included.
	Time time.Duration `json:"-"`
}

// Prediction is what a plan costs per decode step on one GPU (rank 0; ranks are alike).
type Prediction struct {
	Config Config
	// Step is one decode step: every sequence of the batch advances one token.
	Step time.Duration
	// TokensPerSec is Batch tokens per Step.
	TokensPerSec float64
	// ByClass sums the kernels' times (launches included) by class; with overlap their
	// sum exceeds Step.
	ByClass map[device.WorkClass]time.Duration
	// Sites lists the collective call sites in the order the step reaches them (none at
	// TP 1, where collectives exchange nothing).
	Sites []Site
	// CommShare is the collectives' share of Busy.
	CommShare float64
	// Kernels is the graph's kernel count per rank.
	Kernels int
	// WeightBytes and KVBytes are one GPU's weights and the KV cache of Batch sequences of
	// Context positions; Fits says whether both fit MemoryUtilization of the GPU's memory.
	WeightBytes, KVBytes int64
	Fits                 bool
}

func (c Config) withDefaults() Config {
	if c.Context == 0 {
		c.Context = min(512, c.Model.ContextLength)
	}
	if c.WeightDType == 0 {
		c.WeightDType = dtype.BF16
	}
	if c.KVDType == 0 {
		c.KVDType = c.WeightDType
		if c.WeightDType.Quantized() { // quantized weights keep a 16-bit cache, as vLLM's auto does for AWQ/GPTQ
			c.KVDType = dtype.BF16
		}
	}
	return c
}

func (c Config) validate() error {
	if err := c.Profile.Validate(); err != nil {
		return err
	}
	if err := c.Model.Validate(); err != nil {
		return err
	}
	hosts := max(c.Hosts, 1)
	switch {
	case c.Hosts < 0:
		return fmt.Errorf("perf: %d hosts: want at least one", c.Hosts)
	case hosts == 1 && (c.TP < 1 || c.TP > device.MaxDevices):
		return fmt.Errorf("perf: TP degree %d: want 1 to %d (one node)", c.TP, device.MaxDevices)
	case hosts > 1 && (c.TP < hosts || c.TP%hosts != 0 || c.TP/hosts > device.MaxDevices || c.TP > device.MaxNodeDevices):
		return fmt.Errorf("perf: TP degree %d over %d hosts: want a multiple of %d up to %d (at most %d GPUs per host, %d in all)",
			c.TP, hosts, hosts, min(hosts*device.MaxDevices, device.MaxNodeDevices), device.MaxDevices, device.MaxNodeDevices)
	case hosts > 1 && !c.Profile.InterHost.Network():
		return fmt.Errorf("perf: TP across %d hosts of %s: %w", hosts, c.Profile.Name, ErrNoNetwork)
	case hosts > 1 && c.Collectives == NCCL && c.Profile.Calibration == nil:
		return fmt.Errorf("perf: NCCL across hosts is modelled on calibrated profiles only, not %s", c.Profile.Name)
	case c.Batch < 1 || c.Batch > MaxBatch:
		return fmt.Errorf("perf: batch %d: want 1 to %d", c.Batch, MaxBatch)
	case c.Context < 1 || c.Context > c.Model.ContextLength:
		return fmt.Errorf("perf: context of %d positions: want 1 to %d (%s's context length)", c.Context, c.Model.ContextLength, c.Model.Name)
	case c.Collectives == NCCL && c.Algo != comm.Auto && c.Algo != comm.Ring:
		return fmt.Errorf("perf: NCCL collectives run the ring, not %v", c.Algo)
	case c.Collectives == NCCL && c.AllReduceWire != comm.WireExact:
		return fmt.Errorf("perf: NCCL collectives have no %v wire", c.AllReduceWire)
	case !c.AllReduceWire.Supports(c.Algo):
		return fmt.Errorf("perf: algorithm %v does not run the %v wire (oneshot and twoshot do)", c.Algo, c.AllReduceWire)
	}
	return nil
}

// Predict captures the plan's decode graph on a shape-only model and prices it.
func Predict(c Config) (Prediction, error) {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return Prediction{}, err
	}
	graph, weights, plan, err := capture(c)
	if err != nil {
		return Prediction{}, err
	}
	pr := pricer{p: c.Profile, world: c.TP, hosts: c.Hosts, context: int64(c.Context), eager: c.Eager, costs: CostsOf(c.Profile, c.Collectives)}
	pred, err := price(pr, graph)
	if err != nil {
		return Prediction{}, fmt.Errorf("perf: %s at TP %d on %s: %w", c.Model.Name, c.TP, c.Profile.Name, err)
	}
	pred.Config = c
	pred.TokensPerSec = float64(c.Batch) / pred.Step.Seconds()
	pred.WeightBytes = weights
	// K and V rows of the rank's KV heads per layer and position.
	pred.KVBytes = int64(c.Model.Layers) * 2 * int64(plan.KVHeadsPerRank*c.Model.HeadDim*c.KVDType.Size()) * int64(c.Batch) * int64(c.Context)
	pred.Fits = float64(pred.WeightBytes+pred.KVBytes) <= MemoryUtilization*float64(c.Profile.MemoryBytes)
	return pred, nil
}

// capture builds the model shape-only on a simulated node of the profile's fabric, with
// the selector's table from this package's collective model (ModelTable), and captures
// the decode step of the batch. It returns rank 0's graph, the largest rank's weight bytes and the sharding.
func capture(c Config) (*device.Graph, int64, tp.Plan, error) {
	algo := c.Algo
	if c.Collectives == NCCL {
		algo = comm.Ring
	}
	gc := tp.GroupConfig{World: c.TP, Hosts: c.Hosts, SMs: 1, Fabric: c.Profile.Fabric, Comm: comm.Config{
		Algo: algo, Table: ModelTable(c.Profile, c.Hosts, []int{c.TP}, 1<<30), Wire: c.AllReduceWire}}
	if c.Overlap {
		gc.SMs, gc.CommSMs = 2, 1
	}
	g, err := tp.NewGroup(gc)
	if err != nil {
		return nil, 0, tp.Plan{}, fmt.Errorf("perf: %w", err)
	}
	defer g.Close()
	src, err := models.NewDummy(c.Model, 0)
	if err != nil {
		return nil, 0, tp.Plan{}, err
	}
	m, err := models.NewLlama(g, c.Model, src, models.LlamaOptions{ShapeOnly: true, WeightDType: c.WeightDType,
		MaxTokens: c.Batch, MaxSeqs: c.Batch, KVBlocks: 1, KVDType: c.KVDType, Fused: c.Fused, Overlap: c.Overlap})
	if err != nil {
		return nil, 0, tp.Plan{}, fmt.Errorf("perf: %w", err)
	}
	defer m.Close()
	dg, err := m.CaptureDecode(c.Batch, 1)
	if err != nil {
		return nil, 0, tp.Plan{}, fmt.Errorf("perf: %w", err)
	}
	return dg.Graph(0), maxOf(m.WeightBytes()), m.Plan(), nil
}

// price walks the graph in capture order (a topological order): a kernel starts when its
// stream and its dependencies are done.
func price(pr pricer, g *device.Graph) (Prediction, error) {
	p := Prediction{ByClass: map[device.WorkClass]time.Duration{}, Kernels: len(g.Nodes)}
	finish := make([]time.Duration, len(g.Nodes))
	producer := make([]string, len(g.Nodes)) // the compute kernel whose output a node carries on
	streamDone := map[*device.Stream]time.Duration{}
	sites := map[string]int{}
	var commTime time.Duration
	for i, n := range g.Nodes {
		w := n.Kernel.Work
		total, err := pr.kernel(w)
		if err != nil {
			return Prediction{}, fmt.Errorf("kernel %d (%s): %w", i, n.Kernel.Name, err)
		}
		start := streamDone[n.Stream]
		for _, d := range n.Deps {
			start = max(start, finish[d])
		}
		finish[i] = start + total
		streamDone[n.Stream] = finish[i]
		p.Step = max(p.Step, finish[i])
		p.ByClass[w.Class] += total
		if w.Class != device.ClassCollective {
			producer[i] = n.Kernel.Name
			continue
		}
		if len(n.Deps) > 0 {
			producer[i] = producer[slices.Max(n.Deps)]
		}
		commTime += total
		algo := fmt.Sprint(w.Algo)
		if pr.costs.impl == NCCL {
			algo = "nccl-ring"
		}
		key := producer[i] + "|" + string(w.Op) + "|" + algo
		at, ok := sites[key]
		if !ok {
			at = len(p.Sites)
			sites[key] = at
			p.Sites = append(p.Sites, Site{After: producer[i], Op: w.Op, Algo: algo, Message: w.Message})
		}
		p.Sites[at].Calls++
		p.Sites[at].Time += total
	}
	if p.Busy() == 0 {
		return Prediction{}, errors.New("the decode graph has no kernels")
	}
	p.CommShare = float64(commTime) / float64(p.Busy())
	return p, nil
}

func maxOf(xs []int64) int64 {
	var m int64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// Busy is the kernels' times summed (launches included): Step when the streams run one
// after another, more when they overlap.
func (p Prediction) Busy() time.Duration {
	var sum time.Duration
	for _, d := range p.ByClass {
		sum += d
	}
	return sum
}
