package engine

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/diag"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/models/stories260k"
	"github.com/tpslice/tpslice/models/tokenizer"
	"github.com/tpslice/tpslice/topo"
	"github.com/tpslice/tpslice/tp"
)

// Config says what to load and how to run it.
type Config struct {
	// Model is "stories260K" (the embedded trained model), a preset name (dummy weights,
	// built-in tokenizer) or a path: a GGUF file, a llama2.c checkpoint (.bin, its tokenizer
	// beside it) or a Hugging Face directory (config.json, safetensors, tokenizer.json).
	Model string
	// TP is the tensor-parallel degree (1 to 8).
	TP int
	// WeightDType converts every matrix on load (0: as stored; presets default to f32).
	WeightDType dtype.DType
	// KVDType stores the KV cache: f32 (0), or bf16 / f16 at half the memory.
	KVDType dtype.DType
	// Seed seeds a preset's dummy weights.
	Seed uint64
	// MaxBatchTokens is the token budget of one step (vLLM's max_num_batched_tokens;
	// default 2048, vLLM V1's for its API server): the running sequences' decode tokens
	// first, then chunks of the prompts being prefilled fill the rest, in one forward pass.
	MaxBatchTokens int
	// PrefillSteps spreads the prefill over steps while sequences decode (0 or 1: prompt
	// chunks take all the budget leaves): a backlog of prefill tokens (the prompts being
	// prefilled and those queued) is taken in PrefillSteps steps, 1/PrefillSteps of it a
	// step while it lasts, and at least as many as the step's decode tokens or a block. A
	// newcomer's prompt is then spread over several steps instead of lengthening one, and
	// the decode steps stay about as long as one another where a step's time grows with
	// its tokens (a CPU; on a GPU a step of a few hundred tokens costs about what a decode
	// step does). A step with no decode token has nobody's inter-token latency to protect:
	// not bounded.
	PrefillSteps int
	// PrefillBurstRatio lifts PrefillSteps' bound for a burst: when the sequences waiting
	// or prefilling are at least PrefillBurstRatio times those decoding, their prompts take
	// all the budget leaves until the burst is taken (0: never). Paced, a burst's first
	// tokens spread over PrefillSteps steps and its sequences end as spread, so a
	// closed-loop client's next burst arrives as spread and every step carries a few
	// prompts (eager) instead of a few steps carrying many.
	PrefillBurstRatio float64
	// Fused picks the all-reduce + residual + RMSNorm variant (Auto by size, Unfused, …).
	Fused fused.Variant
	// FusedTable, when set, picks Auto's fused variant per world size and token bucket
	// (fused.Select). Else FusedTuneDir, when set, is the directory of the tables autotuned
	// on this node, one file per TP degree, fabric and hidden size (tuned at start-up when
	// missing or stale, see fused.TunedTable). Neither: the fused form of comm's pick.
	FusedTable   *fused.Table
	FusedTuneDir string
	// Algo forces the all-reduce algorithm (Auto: the selector).
	Algo comm.Algo
	// AllReduceWire moves the all-reduces' inputs as bf16 or fp8 (comm.Config.Wire): fewer
	// bytes, a stated error, results no longer bitwise the exact path's (default exact).
	AllReduceWire comm.Wire
	// SMs per device (0: GOMAXPROCS).
	SMs int
	// CPUAffinity says where the ranks run (topo.ParseAffinity reads --cpu-affinity): the
	// zero value spreads them over the NUMA nodes, a rank's SM workers pinned to its CPUs
	// and its weights first touched there (topo.Place), pinning nothing on a machine of
	// one node; explicit lists pin rank r to Lists[r]; None pins nothing.
	CPUAffinity topo.Affinity
	// Fabric is the interconnect the simulated node has, which decides the all-reduce
	// algorithms on offer (0: NVSwitch); the command line resolves it with topo.Detect.
	Fabric device.Fabric
	// Eager turns decode graphs off: every step launches its kernels from the host.
	Eager bool
	// Processes runs each rank in a worker process of its own (--executor mp, vLLM's
	// multiprocessing executor): this process keeps the scheduler and Pick and sends each
	// step to the workers (procmodel.go), which capture and replay their own decode
	// graphs. The workers read TPSLICE_FAULT themselves (Fault is not sent), pin their
	// ranks where CPUAffinity places them, and use no fused table (FusedTable and
	// FusedTuneDir are not used): Auto takes the fused form of comm's pick, which sums in
	// rank order as the tuned variants do, so the tokens are the same.
	Processes bool
	// Overlap splits steps of two or more tokens into two micro-batches whose all-reduces
	// run on a comm stream of CommSMs SMs (default 1) while the other's compute runs.
	Overlap bool
	CommSMs int
	// BF16Dot multiplies bf16 weights with activations rounded to bf16 and VDPBF16PS, as
	// llama.cpp does (models.LlamaOptions.BF16Dot): other logits than f32 activations',
	// 1.1-1.3x farther from float64's, and prompts about 1.6x as fast. The commands'
	// --bf16-dot sets it, on by default.
	BF16Dot bool
	// KVBlocks is the KV cache's size in blocks of BlockSize (16) tokens, on every rank
	// (default: 16 sequences of the whole context). It must hold one sequence of the whole
	// context, so that every request fits alone. Sequences take blocks as they grow.
	KVBlocks int
	// MaxRunning bounds the sequences decoded together; decode graphs are captured for the
	// buckets 1, 2, 4, … up to it. Default: the largest decode graph bucket,
	// MaxGraphBatch, or fewer where the KV cache has fewer blocks (every running sequence
	// holds one at least) or a step fewer tokens (MaxBatchTokens).
	MaxRunning int
	// NoPrefixCaching turns automatic prefix caching off. On, full KV blocks are cached
	// under a hash chained over their tokens, and a request takes the longest cached
	// prefix of its blocks instead of computing it (free cached blocks are evicted least
	// recently used first).
	NoPrefixCaching bool
	// MaxWaiting bounds the requests waiting for a slot (default 256; preempted ones do not
	// count); more fail with ErrQueueFull.
	MaxWaiting int
	// Debug logs start-up and failures as NCCL_DEBUG does (diag.FromEnv reads
	// TPSLICE_DEBUG); nil logs nothing.
	Debug *diag.Logger
	// CollectiveTimeout bounds every wait of a rank on its peers (0: comm.DefaultTimeout):
	// a rank that stalls or skips a collective fails the step within it.
	CollectiveTimeout time.Duration
	// Fault injects one failure into the collectives (comm.FaultFromEnv reads
	// TPSLICE_FAULT); the same injector serves every rebuilt group, so it fires once.
	Fault *comm.FaultInjector
	// BeforeRebuild, when set, is called on the scheduler's goroutine after a failed step,
	// once Health reports the engine unavailable and the step's requests have ended, and
	// before the TP group is rebuilt, which waits for it to return. Tests hold a rebuild
	// open with it to observe what clients see meanwhile, however fast the rebuild is.
	BeforeRebuild func()
}

// BlockSize is the tokens of one KV cache block.
const BlockSize = 16

// DefaultMaxBatchTokens is the default token budget of a step (Config.MaxBatchTokens).
const DefaultMaxBatchTokens = 2048

// MaxGraphBatch is the largest decode graph bucket captured by default, and so the default
// bound of the running batch (Config.MaxRunning).
const MaxGraphBatch = 64

// Graphs describes the decode graphs captured at start-up.
type Graphs struct {
	// Buckets are the batch sizes captured (empty when eager).
	Buckets []int
	// Nodes is the kernels and collectives one rank replays per decode step.
	Nodes int
	// CaptureTime is the time capturing took; InputBytes the static input buffers' size.
	CaptureTime time.Duration
	InputBytes  int
	// InPlace is how many collectives per rank read their peers' inputs in place on replay.
	InPlace int
}

// Engine runs generation on one model over a TP group. Concurrent Generate calls are
// batched by the scheduler (continuous batching).
type Engine struct {
	cfg  Config
	mcfg models.Config
	tok  *tokenizer.Tokenizer
	// endOfGeneration holds the ids that end a sequence: EOS and the end-of-turn tokens.
	endOfGeneration map[int32]bool
	blocks          *BlockPool
	padBlock        int32 // KV block that padding rows of a bucket write to
	sched           scheduler

	// mu guards the TP group, the model and its graphs, which a rebuild replaces, against
	// readers outside the scheduler's goroutine; that goroutine, their only writer, reads
	// them without it.
	mu    sync.RWMutex
	group *tp.Group
	model Model
	// placement is where the ranks run, planned once in New for every build.
	placement topo.Placement
	// decodeGraphs[bucket] holds the graphs proposing one candidate per rank (index 1,
	// greedy) and gathering the full logits (index 0, any other sampling); none when eager.
	decodeGraphs map[int][2]*models.DecodeGraph
	graphs       Graphs

	health    health
	failed    chan struct{} // closed when a rebuild failed: the engine cannot serve again
	closeOnce sync.Once
}

// New loads the model and its tokenizer and shards the model over cfg.TP ranks.
func New(cfg Config) (*Engine, error) {
	if cfg.TP == 0 {
		cfg.TP = 1
	}
	if cfg.MaxBatchTokens == 0 {
		cfg.MaxBatchTokens = DefaultMaxBatchTokens
	}
	if cfg.PrefillSteps < 0 {
		return nil, fmt.Errorf("engine: prefill steps must be ≥ 0, got %d", cfg.PrefillSteps)
	}
	if !(cfg.PrefillBurstRatio >= 0) || math.IsInf(cfg.PrefillBurstRatio, 0) { // NaN fails the first
		return nil, fmt.Errorf("engine: prefill burst ratio must be a number ≥ 0, got %v", cfg.PrefillBurstRatio)
	}
	if cfg.MaxWaiting == 0 {
		cfg.MaxWaiting = 256
	}
	mcfg, src, tok, extraEOG, err := open(cfg)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	perSeq := (mcfg.ContextLength + BlockSize - 1) / BlockSize
	if cfg.KVBlocks == 0 {
		cfg.KVBlocks = 16 * perSeq
	}
	if cfg.MaxRunning == 0 {
		cfg.MaxRunning = min(MaxGraphBatch, cfg.KVBlocks, cfg.MaxBatchTokens)
	}
	switch {
	case cfg.MaxRunning < 1 || cfg.MaxWaiting < 1 || cfg.MaxBatchTokens < cfg.MaxRunning:
		return nil, fmt.Errorf("engine: max running %d, max waiting %d, max batch tokens %d: each must be positive and the batch must hold the running sequences", cfg.MaxRunning, cfg.MaxWaiting, cfg.MaxBatchTokens)
	case cfg.KVBlocks < perSeq:
		return nil, fmt.Errorf("engine: %d KV blocks of %d tokens do not hold one sequence of the whole context (%d tokens, %d blocks)", cfg.KVBlocks, BlockSize, mcfg.ContextLength, perSeq)
	}
	if tok.VocabSize() > mcfg.Vocab {
		return nil, fmt.Errorf("engine: %s: the tokenizer has %d tokens, the model only %d", cfg.Model, tok.VocabSize(), mcfg.Vocab)
	}
	placement, err := place(cfg)
	if err != nil {
		return nil, err
	}
	// The last block is kept out of the pool: padding rows of a bucket write there.
	e := &Engine{cfg: cfg, mcfg: mcfg, tok: tok, endOfGeneration: endOfGeneration(tok, extraEOG),
		blocks: NewBlockPool(cfg.KVBlocks), padBlock: int32(cfg.KVBlocks), placement: placement, failed: make(chan struct{})}
	if err := e.build(src); err != nil {
		return nil, err
	}
	e.logStartup(0)
	e.sched.cond = sync.NewCond(&e.sched.mu)
	e.sched.stopped = make(chan struct{})
	go e.loop()
	return e, nil
}

// build brings up the TP group (devices, communicator, streams), loads the model's shards
// from src and captures the decode graphs: what New starts with and what a rebuild after a
// failed step makes anew.
func (e *Engine) build(src format.Source) error {
	cfg := e.cfg
	if cfg.Processes {
		m, graphs, err := launchRanks(cfg, e.mcfg, e.placement.CPUs(), len(e.Recoveries()) > 0)
		if err != nil {
			return err
		}
		e.mu.Lock() // no group of this process's: the workers hold the graphs and replay them
		e.group, e.model, e.decodeGraphs, e.graphs = nil, m, nil, graphs
		e.mu.Unlock()
		return nil
	}
	gc := groupConfig(cfg)
	gc.CPUs = e.placement.CPUs()
	g, err := tp.NewGroup(gc)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	table, err := e.fusedTable(g)
	if err != nil {
		_ = g.Close()
		return err
	}
	m, err := models.NewLlama(g, e.mcfg, src, llamaOptions(cfg, table))
	if err != nil {
		_ = g.Close()
		return fmt.Errorf("engine: %w", err)
	}
	var graphs map[int][2]*models.DecodeGraph
	var info Graphs
	if !cfg.Eager {
		if graphs, info, err = captureGraphs(m, cfg.MaxRunning); err != nil {
			m.Close()
			_ = g.Close()
			return err
		}
	}
	e.mu.Lock()
	e.group, e.model, e.decodeGraphs, e.graphs = g, m, graphs, info
	e.mu.Unlock()
	return nil
}

// groupConfig is the TP group cfg asks for, in this process or in each worker process.
func groupConfig(cfg Config) tp.GroupConfig {
	gc := tp.GroupConfig{World: cfg.TP, SMs: cfg.SMs, Fabric: cfg.Fabric,
		Comm: comm.Config{Algo: cfg.Algo, Timeout: cfg.CollectiveTimeout, Fault: cfg.Fault, Wire: cfg.AllReduceWire}}
	if cfg.Overlap {
		gc.CommSMs = max(cfg.CommSMs, 1)
	}
	return gc
}

// llamaOptions are the model's runtime sizes cfg asks for, with the fused table chosen.
func llamaOptions(cfg Config, table *fused.Table) models.LlamaOptions {
	return models.LlamaOptions{WeightDType: cfg.WeightDType, MaxTokens: cfg.MaxBatchTokens,
		MaxSeqs: cfg.MaxRunning, BlockSize: BlockSize, KVBlocks: cfg.KVBlocks + 1, KVDType: cfg.KVDType,
		Fused: cfg.Fused, FusedTable: table, Overlap: cfg.Overlap, BF16Dot: cfg.BF16Dot}
}

// graphBuckets are the batch sizes whose decode steps are captured: 1, 2, 4, … up to
// maxRunning, which is the last.
func graphBuckets(maxRunning int) []int {
	var out []int
	for b := 1; ; b *= 2 {
		b = min(b, maxRunning)
		out = append(out, b)
		if b == maxRunning {
			return out
		}
	}
}

// captureGraphs captures the decode step of every batch bucket (graphBuckets), greedy and
// with the full logits.
func captureGraphs(m Model, maxRunning int) (map[int][2]*models.DecodeGraph, Graphs, error) {
	start := time.Now()
	graphs := map[int][2]*models.DecodeGraph{}
	var info Graphs
	for _, b := range graphBuckets(maxRunning) {
		var pair [2]*models.DecodeGraph
		for k := range 2 {
			g, err := m.CaptureDecode(b, k)
			if err != nil {
				return nil, Graphs{}, fmt.Errorf("engine: %w", err)
			}
			pair[k] = g
			info.Nodes = g.Nodes()
			info.InPlace = g.InPlace
			info.InputBytes += 4 * (len(g.Step.IDs) + len(g.Step.Batch.Pos) + len(g.Step.Batch.Seq) + len(g.Step.Sample))
			for _, t := range g.Step.Batch.Tables {
				info.InputBytes += 4 * len(t)
			}
		}
		graphs[b] = pair
		info.Buckets = append(info.Buckets, b)
	}
	info.CaptureTime = time.Since(start)
	return graphs, info, nil
}

// DecodeGraphReplays returns, per batch bucket, how many decode steps replayed the
// bucket's captured graphs (greedy and full-logits together) since the TP group was last
// built, as vLLM reports its CUDA graph use: a step that ran eagerly gives the same tokens,
// so only these counts show the graphs serve. A rebuild starts them again; empty when eager.
func (e *Engine) DecodeGraphReplays() map[int]int64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if m, ok := e.model.(interface{ DecodeGraphReplays() map[int]int64 }); ok {
		return m.DecodeGraphReplays() // the worker processes replay them
	}
	replays := make(map[int]int64, len(e.graphs.Buckets))
	for _, bucket := range e.graphs.Buckets {
		pair := e.decodeGraphs[bucket]
		replays[bucket] = pair[0].Replays() + pair[1].Replays()
	}
	return replays
}

// StagingBytesSaved returns the bytes that replayed decode graphs read from peers in place
// instead of copying them into staging buffers first (summed over ranks); 0 with worker
// processes, which replay no graph.
func (e *Engine) StagingBytesSaved() int64 {
	g := e.Model().Group()
	if g == nil {
		return 0
	}
	return g.Comm().GraphBytesSaved()
}

// closeModel frees the model and the TP group (or ends the worker processes).
func (e *Engine) closeModel() error {
	e.model.Close()
	if e.group == nil {
		return nil
	}
	return e.group.Close()
}

// Graphs returns what was captured at start-up (or at the last rebuild).
func (e *Engine) Graphs() Graphs {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.graphs
}

// open finds the model's config, weights, tokenizer and the ids besides the tokenizer's
// that end a generation (a Hugging Face generation_config.json's): the embedded
// stories260K, a preset, or a checkpoint path (a GGUF file's header parsed once for the
// weights and the tokenizer; a llama2.c .bin takes the tokenizer.bin or
// tok<vocab>.bin beside it, as run.c's users keep them).
func open(cfg Config) (mcfg models.Config, src format.Source, tok *tokenizer.Tokenizer, eog []int, err error) {
	// src is assigned only once its opener succeeded: a typed nil in it would not be nil.
	fail := func(format string, args ...any) (models.Config, format.Source, *tokenizer.Tokenizer, []int, error) {
		if src != nil {
			_ = src.Close()
		}
		return models.Config{}, nil, nil, nil, fmt.Errorf("engine: "+format, args...)
	}
	st, statErr := os.Stat(cfg.Model)
	if statErr == nil && !st.IsDir() && strings.EqualFold(filepath.Ext(cfg.Model), ".gguf") { // one parse for both
		gf, err := format.ParseGGUF(cfg.Model)
		if err != nil {
			return fail("%w", err)
		}
		fs, c, err := models.OpenGGUFFile(cfg.Model, gf)
		if err != nil {
			return fail("%w", err)
		}
		src, mcfg = fs, c
		if tok, err = tokenizer.FromGGUFFile(cfg.Model, gf); err != nil {
			return fail("tokenizer of %s: %w", cfg.Model, err)
		}
		return mcfg, src, tok, nil, nil
	}
	if mcfg, src, err = openWeights(cfg); err != nil {
		return models.Config{}, nil, nil, nil, err
	}
	if tok, err = LoadTokenizer(cfg.Model); err != nil {
		return fail("tokenizer of %s: %w", cfg.Model, err)
	}
	if statErr == nil && st.IsDir() {
		if eog, err = generationConfigEOS(filepath.Join(cfg.Model, "generation_config.json")); err != nil {
			return fail("end-of-generation tokens of %s: %w", cfg.Model, err)
		}
	}
	return mcfg, src, tok, eog, nil
}

// openWeights opens the model's config and weights alone (open without the tokenizer):
// what a rebuild after a failed step reads again, since the tokenizer does not change.
func openWeights(cfg Config) (models.Config, format.Source, error) {
	if cfg.Model == stories260k.Name {
		fs, c, err := models.Llama2CFromBytes(stories260k.Name, stories260k.Checkpoint)
		if err != nil {
			return models.Config{}, nil, fmt.Errorf("engine: %w", err)
		}
		return c, fs, nil
	}
	if _, statErr := os.Stat(cfg.Model); statErr != nil {
		c, err := models.Preset(cfg.Model)
		if err != nil {
			return models.Config{}, nil, unknownModel(cfg.Model, statErr)
		}
		dummy, err := models.NewDummy(c, cfg.Seed)
		if err != nil {
			return models.Config{}, nil, fmt.Errorf("engine: %w", err)
		}
		return c, dummy, nil
	}
	fs, c, err := models.Open(cfg.Model)
	if err != nil {
		return models.Config{}, nil, fmt.Errorf("engine: %w", err)
	}
	return c, fs, nil
}

// unknownModel is the error of a model name that is no file or directory (statErr says
// why) and no built-in model; it lists the built-in ones, the default first.
func unknownModel(model string, statErr error) error {
	return fmt.Errorf("engine: model %q is not a file, a directory or a built-in model (%s, the default, and the presets %s): %w",
		model, stories260k.Name, strings.Join(models.Presets(), ", "), statErr)
}

// LoadConfig reads only the config (shape and architecture) of a model named as
// Config.Model names it, for tools that price or check a model without loading it.
func LoadConfig(model string) (models.Config, error) {
	var src *format.FileSource
	var cfg models.Config
	var err error
	if model == stories260k.Name {
		src, cfg, err = models.Llama2CFromBytes(model, stories260k.Checkpoint)
	} else if _, statErr := os.Stat(model); statErr != nil {
		if cfg, err = models.Preset(model); err != nil {
			return models.Config{}, unknownModel(model, statErr)
		}
		return cfg, nil
	} else {
		src, cfg, err = models.Open(model)
	}
	if err != nil {
		return models.Config{}, err
	}
	return cfg, src.Close()
}

// LoadTokenizer loads only the tokenizer of a model named as Config.Model names it (the
// embedded stories260K, a preset, a GGUF file, a Hugging Face directory or tokenizer.json,
// a llama2.c checkpoint with its tokenizer beside it, or a llama2.c tokenizer file itself),
// for tools that tokenize without loading weights.
func LoadTokenizer(model string) (*tokenizer.Tokenizer, error) {
	if model == stories260k.Name {
		return tokenizer.FromLlama2CBytes(stories260k.Name+" tok512.bin", stories260k.Tokenizer)
	}
	if _, err := os.Stat(model); err != nil {
		mcfg, perr := models.Preset(model)
		if perr != nil {
			return nil, unknownModel(model, err)
		}
		return tokenizer.Synthetic(mcfg.Vocab)
	}
	if strings.EqualFold(filepath.Ext(model), ".bin") {
		if src, mcfg, err := models.OpenLlama2C(model); err == nil { // a checkpoint, not a tokenizer file
			_ = src.Close()
			path, err := llama2CTokenizer(model, mcfg.Vocab)
			if err != nil {
				return nil, fmt.Errorf("engine: tokenizer of %s: %w", model, err)
			}
			model = path
		}
	}
	return tokenizer.Load(model)
}

// llama2CTokenizer finds the tokenizer of a llama2.c checkpoint: tokenizer.bin (run.c's
// default) or tok<vocab>.bin (the tinyllamas' own) in the checkpoint's directory.
func llama2CTokenizer(checkpoint string, vocab int) (string, error) {
	dir := filepath.Dir(checkpoint)
	tried := []string{filepath.Join(dir, "tokenizer.bin"), filepath.Join(dir, fmt.Sprintf("tok%d.bin", vocab))}
	for _, p := range tried {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("a llama2.c checkpoint takes its tokenizer from %s or %s; neither exists", tried[0], tried[1])
}

// Model returns the loaded model (a new one after each rebuild).
func (e *Engine) Model() Model {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.model
}

// Tokenizer returns the model's tokenizer.
func (e *Engine) Tokenizer() *tokenizer.Tokenizer { return e.tok }

// Blocks returns the KV block pool.
func (e *Engine) Blocks() *BlockPool { return e.blocks }

// Close stops the scheduler (requests still waiting or running end with ErrClosed), then
// frees the model and the TP group.
func (e *Engine) Close() error {
	var err error
	e.closeOnce.Do(func() {
		q := &e.sched
		q.mu.Lock()
		q.closed = true
		q.cond.Broadcast()
		q.mu.Unlock()
		<-q.stopped
		select {
		case <-e.failed: // the rebuild that failed closed them
		default:
			err = e.closeModel()
		}
	})
	return err
}

// Load returns the requests running and waiting now (preempted ones among those waiting),
// for metrics and admission.
func (e *Engine) Load() (running, waiting int) {
	q := &e.sched
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running, len(q.resuming) + len(q.waiting)
}
