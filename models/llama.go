package models

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/tp"
)

// LlamaOptions sizes a Llama model's runtime state.
type LlamaOptions struct {
	// WeightDType stores every matrix in this dtype (f32, bf16 or f16, converted exactly on
	// load, or a block type, quantized on load); 0 keeps each tensor's own. Norm weights are
	// always f32.
	WeightDType dtype.DType
	// MaxTokens bounds the tokens of one forward pass (a prefill chunk or a decode batch).
	MaxTokens int
	// MaxSeqs bounds the sequences sampled in one pass.
	MaxSeqs int
	// BlockSize is the KV cache block (tokens), KVBlocks the blocks per rank (0: enough
	// for MaxSeqs sequences of the full context).
	BlockSize, KVBlocks int
	// KVDType stores the KV cache: f32 (0), or bf16 / f16, which halve it (vLLM's
	// kv_cache_dtype) and round every K and V element once.
	KVDType dtype.DType
	// Fused picks the all-reduce + residual + RMSNorm variant (Auto: by size).
	Fused fused.Variant
	// FusedTable, when set, is what Auto consults first: the variant per world size and
	// token count (fused.Select); nil keeps the fused form of comm's all-reduce pick.
	FusedTable *fused.Table
	// Overlap runs steps of two or more tokens as two micro-batches whose all-reduces run
	// on the group's comm stream while the other's compute runs (the group must have
	// comm streams: tp.GroupConfig.CommSMs).
	Overlap bool
	// BF16Dot multiplies bf16 matrices as llama.cpp does: activations rounded to bf16 and
	// VDPBF16PS (layers.LinearBF16DotRows), in place of f32 activations against widened
	// weights; it rounds every input of a bf16 matrix (docs/benchmarks/decode.md, "bf16 dot
	// products"). The commands turn it on by default (--bf16-dot).
	BF16Dot bool
	// ShapeOnly builds the model without weight memory: matrices have their shapes and
	// dtypes but no data, and nothing is read from the source. Such a model captures decode
	// graphs (capture records kernels without running them) for performance models of
	// models larger than this machine, and refuses to run. Give it a small KVBlocks.
	ShapeOnly bool
}

func (o LlamaOptions) withDefaults(cfg Config) LlamaOptions {
	if o.MaxTokens == 0 {
		o.MaxTokens = 256
	}
	if o.MaxSeqs == 0 {
		o.MaxSeqs = 1
	}
	if o.BlockSize == 0 {
		o.BlockSize = 16
	}
	if o.KVBlocks == 0 {
		o.KVBlocks = o.MaxSeqs * ((cfg.ContextLength + o.BlockSize - 1) / o.BlockSize)
	}
	return o
}

// Llama is a Llama-family decoder sharded over a TP group: every rank holds its shard of
// the weights, its KV heads' cache and its activations, and runs the decode step of
// DESIGN.md on its own stream — vocab-parallel embedding, then per layer column-parallel
// QKV, RoPE, paged GQA attention, row-parallel o_proj and the fused all-reduce + residual +
// RMSNorm, column-parallel gate/up, SwiGLU, row-parallel down and the fused all-reduce
// again, and finally the vocab-parallel LM head with each rank's sampling candidates.
type Llama struct {
	cfg   Config
	plan  tp.Plan
	group *tp.Group
	opt   LlamaOptions
	rope  *layers.RopeTable
	ranks []*llamaRank
	// fullLogitRows counts the sampled tokens whose full logits were all-gathered, so that
	// callers can check who pays for that gather (logprobs must not: they gather two
	// terms a shard).
	fullLogitRows atomic.Int64
}

// NewLlama loads every local rank's shard of the weights from src (rank workers read in
// parallel) and allocates the KV caches and activations: every rank of a group built in
// one process, and only its own rank of a group joined by a worker process
// (tp.JoinGroup), whose other ranks' weights are never read.
func NewLlama(g *tp.Group, cfg Config, src format.Source, opt LlamaOptions) (*Llama, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.CheckSource(src); err != nil {
		return nil, err
	}
	opt = opt.withDefaults(cfg)
	if opt.WeightDType != 0 && !opt.WeightDType.Valid() {
		return nil, fmt.Errorf("models: weight dtype %v is not one of %s", opt.WeightDType, dtype.Names(dtype.DType.Valid))
	}
	if t := opt.WeightDType; t.Quantized() {
		for _, d := range []struct {
			name string
			n    int
		}{{"hidden size", cfg.Hidden}, {"attention width (heads × head dim)", cfg.Heads * cfg.HeadDim}, {"FFN width", cfg.Intermediate}} {
			if !t.Whole(d.n) {
				return nil, fmt.Errorf("models: %s: weight dtype %v needs rows of whole %d-value blocks, but the %s is %d; choose q8_0 or q4_0 (blocks of 32), or f16", cfg.Name, t, t.BlockSize(), d.name, d.n)
			}
		}
	}
	if opt.KVDType != 0 && !opt.KVDType.Scalar() {
		return nil, fmt.Errorf("models: kv cache dtype %v is not f32, bf16 or f16", opt.KVDType)
	}
	if opt.Overlap && g.CommStream(0) == nil {
		return nil, fmt.Errorf("models: overlap needs comm streams: build the group with CommSMs > 0")
	}
	if opt.MaxTokens < 1 || opt.MaxSeqs < 1 || opt.MaxSeqs > opt.MaxTokens || opt.BlockSize < 1 || opt.KVBlocks < 1 {
		return nil, fmt.Errorf("models: llama options out of range: %+v", opt)
	}
	plan, err := tp.NewPlan(g.World(), tp.Shape{Hidden: cfg.Hidden, Intermediate: cfg.Intermediate, Heads: cfg.Heads,
		KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim, Vocab: cfg.Vocab, FFNBlock: ffnBlock(cfg, src, opt.WeightDType)})
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", cfg.Name, err)
	}
	rope, err := newRope(cfg, src)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", cfg.Name, err)
	}
	m := &Llama{cfg: cfg, plan: plan, group: g, opt: opt, rope: rope, ranks: make([]*llamaRank, g.World())}
	// Each rank's shards are allocated and written on a thread of its CPUs, so that they
	// lie in the memory of its NUMA node (first touch).
	err = g.RunPinned(func(r int) error {
		rk, err := newLlamaRank(m, r, src)
		m.ranks[r] = rk
		return err
	})
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("models: loading %s from %v: %w", cfg.Name, src, err)
	}
	return m, nil
}

// ffnBlock is the granule the FFN is split in (tp.Shape.FFNBlock): the block size of
// every layer's ffn_down as loaded (the weight dtype where one is set, else the stored
// types, whose sizes, 1, 32 and 256, divide one another, so the largest is a multiple of
// all), so that no rank's down shard cuts a block and every rank reads exactly its own
// bytes of the model.
func ffnBlock(cfg Config, src format.Source, weights dtype.DType) int {
	if weights != 0 {
		return weights.BlockSize()
	}
	block := 1
	for l := range cfg.Layers {
		if info, ok := src.Tensor(LayerTensorName(l, FFNDown)); ok {
			block = max(block, info.DType.BlockSize())
		}
	}
	return block
}

// Config returns the model's configuration.
func (m *Llama) Config() Config { return m.cfg }

// Plan returns how the model is sharded.
func (m *Llama) Plan() tp.Plan { return m.plan }

// Group returns the TP group the model runs on.
func (m *Llama) Group() *tp.Group { return m.group }

// Options returns the runtime sizes the model was built with.
func (m *Llama) Options() LlamaOptions { return m.opt }

// WeightBytes returns the bytes of weights each rank holds (0 for a rank of another
// process). (For a ShapeOnly model: the bytes it would hold.)
func (m *Llama) WeightBytes() []int64 {
	out := make([]int64, len(m.ranks))
	for r, rk := range m.ranks {
		if rk != nil {
			out[r] = rk.weightBytes
		}
	}
	return out
}

// LoadNotes says, once per kind of tensor, where a TP split cut blocks of a quantized
// type, so that each rank holds the whole blocks its columns touch
// ("blk.*.attn_output.weight: q4_k shards of 64 columns cut its 256-value blocks; every
// rank holds the whole blocks (+300% bytes over its shard)"). None when every cut falls on
// a block boundary, as the FFN's do wherever it has at least one block a rank
// (tp.Shape.FFNBlock).
func (m *Llama) LoadNotes() []string {
	type kind struct {
		name        string
		dtype       dtype.DType
		block, cols int
	}
	var order []kind
	extra, shard := map[kind]int{}, map[kind]int{}
	for _, rk := range m.ranks {
		if rk == nil { // a rank of another process
			continue
		}
		for _, n := range rk.notes {
			k := kind{layerPattern(n.tensor), n.dtype, n.block, n.cols}
			if _, seen := shard[k]; !seen {
				order = append(order, k)
			}
			extra[k] += n.extra
			shard[k] += n.shard
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, fmt.Sprintf("%s: %v shards of %d columns cut its %d-value blocks; each rank holds the whole blocks its columns touch (+%.0f%% bytes over its shard), its input zero around its columns",
			k.name, k.dtype, k.cols, k.block, 100*float64(extra[k])/float64(shard[k])))
	}
	return out
}

// layerPattern writes a per-layer tensor name with * for the layer ("blk.*.ffn_down.weight").
func layerPattern(name string) string {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return name
	}
	if _, after, ok := strings.Cut(rest, "."); ok {
		return "blk.*." + after
	}
	return name
}

// Close frees every rank's device memory.
func (m *Llama) Close() {
	for _, rk := range m.ranks {
		if rk != nil {
			rk.free()
		}
	}
}

// llamaRank is one rank's share of the model.
type llamaRank struct {
	m      *Llama
	rank   int
	dev    *device.Device
	bufs   []*device.Buffer // everything allocated, for free
	layers []llamaLayer
	embed  layers.Matrix // vocab rows [v0, v0+Rows) of token_embd
	head   layers.Matrix // the same rows of the LM head (output, or token_embd when tied)
	v0     int
	norm   *device.Buffer // output_norm
	kv     *layers.PagedKVCache
	act    activations

	overlapEvents overlapEvents

	weightBytes int64
	notes       []shardNote
	maxBlocks   int // the most blocks a kernel of grid runs (maxBlocks)
}

// shardNote records a row-parallel shard that holds whole blocks beyond its columns (see
// loadMatrix): extra of its values lie outside the shard's own.
type shardNote struct {
	tensor       string
	dtype        dtype.DType
	block, cols  int
	extra, shard int
}

type llamaLayer struct {
	attnNorm, ffnNorm *device.Buffer
	q, k, v, gate, up columnLinear
	o, down           rowLinear
	// qNorm, kNorm: the per-head RMSNorm weights of q and k (Arch.QKNorm); nil where the
	// model has none.
	qNorm, kNorm *device.Buffer
}

func (rk *llamaRank) free() {
	var errs []error
	for _, b := range rk.bufs {
		errs = append(errs, b.Free())
	}
	rk.bufs = nil
	_ = errors.Join(errs...)
}
