package models

import (
	"fmt"
	"math"
	"runtime"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/quant"
	"github.com/tpslice/tpslice/vec"
)

// MaxCandidates bounds the candidates each rank proposes per sampled token; wider top-k
// gathers the full logits instead.
const MaxCandidates = 1024

// Step is one forward pass: tokens of one or more sequences with their positions and KV
// block tables, and which of them to choose a next token for.
type Step struct {
	// IDs are the input tokens, one per Batch position.
	IDs []int32
	// Batch gives each token's position, sequence and the sequences' KV block tables.
	Batch layers.Batch
	// Sample lists the token indices whose next token is wanted (each sequence's last).
	Sample []int
	// Candidates is how many of its best tokens each rank proposes per sampled token:
	// 1 for greedy, K for top-k; 0 gathers the full logits.
	Candidates int
	// Logprobs has each rank also gather, per sampled token, its vocab shard's max logit
	// and sum of exp(logit − max) behind its candidates (or logits shard): two floats per
	// rank, which LogSumExp combines into the log-softmax's normalizer.
	Logprobs bool
	// Samplers, one per sampled token or none (Candidates > 0 only), have each rank adjust
	// its logits shard and propose its candidates from the adjusted logits: with Draw, its
	// Gumbel-max winner first, then its best Candidates−1; after them, the shard's
	// ShardLogSumExpAt terms at the row's temperature (with Terms; else −Inf, 0), which
	// SamplerTerms returns. Logprobs stay the raw logits'. A decode graph reads them at
	// each replay.
	Samplers []layers.RowSampler
}

// stride is the floats each rank gathers per sampled token: its candidates (an id and a
// logit each) or its logits shard of vpr, then the samplers' terms, then the shard's
// log-sum-exp terms.
func (st Step) stride(vpr int) int {
	n := 2 * st.Candidates
	if st.Candidates == 0 {
		n = vpr
	}
	if st.Samplers != nil {
		n += 2
	}
	if st.Logprobs {
		n += 2
	}
	return n
}

// activations are one rank's buffers for a forward pass of up to MaxTokens tokens and
// MaxSeqs sampled rows.
type activations struct {
	x, residual, h, q, k, v, attn, gate, up, hs, logits *device.Buffer
	packed, full, cands, gathered                       *device.Buffer
	xq                                                  [quant.MaxActs + 1]*device.Buffer // quantized inputs, by format
	xqStride                                            [quant.MaxActs + 1]int            // their bytes per token
	xb                                                  *device.Buffer                    // inputs rounded to bf16 (BF16Dot)
	xbStride                                            int                               // their elements per token
	scratch                                             [][]float32                       // attention, one per block of a grid
	top                                                 []layers.Candidate
}

func (rk *llamaRank) allocState() error {
	m, cfg, p := rk.m, rk.m.cfg, rk.m.plan
	T, S, n := m.opt.MaxTokens, m.opt.MaxSeqs, p.World
	nq, nkv, hd, fr := p.HeadsPerRank, p.KVHeadsPerRank, cfg.HeadDim, p.FFNPerRank // the widest rank's FFN
	kv, err := layers.NewPagedKVCache(layers.KVCacheConfig{Layers: cfg.Layers, NumBlocks: m.opt.KVBlocks,
		BlockSize: m.opt.BlockSize, KVHeads: nkv, HeadDim: hd, DType: m.opt.KVDType})
	if err != nil {
		return err
	}
	rk.kv = kv
	a := &rk.act
	for _, e := range []struct {
		b     **device.Buffer
		count int
	}{
		{&a.x, T * cfg.Hidden}, {&a.residual, T * cfg.Hidden}, {&a.h, T * cfg.Hidden},
		{&a.q, T * nq * hd}, {&a.attn, T * nq * hd}, {&a.k, T * nkv * hd}, {&a.v, T * nkv * hd},
		{&a.gate, T * fr}, {&a.up, T * fr}, {&a.hs, S * cfg.Hidden}, {&a.logits, S * rk.head.Rows},
		{&a.packed, S * (p.VocabPerRank + 2)}, {&a.full, n * S * (p.VocabPerRank + 2)},
		{&a.cands, S * (MaxCandidates*2 + 4)}, {&a.gathered, n * S * (MaxCandidates*2 + 4)},
	} {
		b, err := rk.dev.Alloc(dtype.F32, e.count)
		if err != nil {
			return fmt.Errorf("activations: %w", err)
		}
		rk.bufs = append(rk.bufs, b)
		*e.b = b
	}
	if err := rk.allocQuantInputs(); err != nil {
		return fmt.Errorf("activations: %w", err)
	}
	per := kv.AttentionScratchLen(nq, cfg.ContextLength)
	for range rk.maxBlocks { // one per block of the attention kernel (a grid)
		a.scratch = append(a.scratch, make([]float32, per))
	}
	a.top = make([]layers.Candidate, MaxCandidates)
	return nil
}

// Forward runs one step on every rank (each rank's worker enqueues its kernels and
// collectives on its stream) and waits for it. Afterwards Candidates or Logits hold the
// result for the sampled tokens.
func (m *Llama) Forward(st Step) error {
	if err := m.runnable(st); err != nil {
		return err
	}
	return m.group.Run(func(r int) error {
		rk := m.ranks[r]
		s := m.group.Stream(r)
		if err := rk.enqueue(s, st); err != nil {
			return err
		}
		return s.Synchronize()
	})
}

// runnable refuses a step that check refuses, and every step of a shape-only model.
func (m *Llama) runnable(st Step) error {
	if m.opt.ShapeOnly {
		return fmt.Errorf("models: %s was built shape-only (no weights): it can capture graphs for performance models, not run", m.cfg.Name)
	}
	return m.check(st)
}

// check refuses on the host every step a kernel would refuse: kernel errors are sticky
// and fail the communicator, so a bad step must never reach the streams.
func (m *Llama) check(st Step) error {
	T, S := len(st.IDs), len(st.Sample)
	switch {
	case T == 0 || T > m.opt.MaxTokens:
		return fmt.Errorf("models: forward of %d tokens: want 1 to %d (MaxTokens)", T, m.opt.MaxTokens)
	case st.Batch.Tokens() != T:
		return fmt.Errorf("models: forward: %d ids but %d positions", T, st.Batch.Tokens())
	case S == 0 || S > m.opt.MaxSeqs:
		return fmt.Errorf("models: forward: %d sampled tokens: want 1 to %d (MaxSeqs)", S, m.opt.MaxSeqs)
	case st.Candidates < 0 || st.Candidates > MaxCandidates:
		return fmt.Errorf("models: forward: %d candidates per rank: want 0 to %d", st.Candidates, MaxCandidates)
	}
	if err := m.checkSamplers(st); err != nil {
		return err
	}
	for i, t := range st.Sample {
		if t < 0 || t >= T {
			return fmt.Errorf("models: forward: sampled token %d is index %d of %d tokens", i, t, T)
		}
	}
	for i, id := range st.IDs {
		if id < 0 || int(id) >= m.cfg.Vocab {
			return fmt.Errorf("models: forward: token %d is id %d, outside the vocabulary of %d", i, id, m.cfg.Vocab)
		}
	}
	for i, pos := range st.Batch.Pos {
		if pos < 0 || int(pos) >= m.cfg.ContextLength {
			return fmt.Errorf("models: forward: token %d at position %d, outside the context of %d", i, pos, m.cfg.ContextLength)
		}
	}
	if err := m.ranks[m.group.Local()[0]].kv.Check(st.Batch); err != nil {
		return fmt.Errorf("models: forward: %w", err)
	}
	return nil
}

// enqueue issues one rank's kernels and collectives for a step on its compute stream s:
// the embedding, then per layer the attention block and the MLP block, each closed by the
// fused all-reduce + residual + RMSNorm, then the LM head. With overlap the layers run as
// two micro-batches (overlap.go).
func (rk *llamaRank) enqueue(s *device.Stream, st Step) error {
	m, cfg := rk.m, rk.m.cfg
	T, S, H := len(st.IDs), len(st.Sample), cfg.Hidden
	a := &rk.act
	all, err := rk.micro(st, 0, T)
	if err != nil {
		return err
	}
	x, res, h := a.x.Float32s()[:T*H], a.residual.Float32s()[:T*H], a.h.Float32s()[:T*H]
	embedWork := device.Work{Class: device.ClassEmbedding, Bytes: int64(T * (rk.embed.RowBytes() + 2*H*4))}
	err = s.Launch(device.Kernel{Name: "embedding", Grid: 1, Work: embedWork, Block: func(device.Block) error {
		clear(res)
		return layers.Embedding(x, st.IDs, rk.embed, rk.v0, cfg.Vocab)
	}})
	if err == nil {
		err = rk.reduce(s, all, rk.layers[0].attnNorm)
	}
	if err != nil {
		return err
	}
	if cs := m.group.CommStream(rk.rank); m.opt.Overlap && cs != nil && T >= 2 {
		err = rk.overlapLayers(s, cs, st)
	} else {
		for l := range rk.layers {
			if err = rk.layer(s, s, l, all); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	hs, logits := a.hs.Float32s()[:S*H], a.logits.Float32s()[:S*rk.head.Rows]
	gatherWork := device.Work{Class: device.ClassElementwise, Bytes: int64(2 * S * H * 4)}
	err = s.Launch(device.Kernel{Name: "gather_sampled", Grid: 1, Work: gatherWork, Block: func(device.Block) error {
		for i, t := range st.Sample {
			copy(hs[i*H:(i+1)*H], h[t*H:(t+1)*H])
		}
		return nil
	}})
	in, quantize := rk.quantizeInput(s, "quantize_hs", hs, H, 0, 0, rk.head)
	if err == nil {
		err = quantize()
	}
	if err == nil {
		err = rk.linear(s, "lm_head", logits, in, rk.head, nil)()
	}
	if err == nil {
		err = rk.candidates(s, S, st)
	}
	return err
}

// microBatch is tokens [t0, t1) of a step: their batch and views of the rows they own in
// the activations that the fused all-reduce works on.
type microBatch struct {
	t0, t1      int
	batch       layers.Batch
	x, res, out *device.Buffer
}

func (rk *llamaRank) micro(st Step, t0, t1 int) (microBatch, error) {
	H, a := rk.m.cfg.Hidden, &rk.act
	mb := microBatch{t0: t0, t1: t1, batch: layers.Batch{Pos: st.Batch.Pos[t0:t1], Tables: st.Batch.Tables}}
	if st.Batch.Seq != nil {
		mb.batch.Seq = st.Batch.Seq[t0:t1]
	} else {
		mb.batch.Tables = st.Batch.Tables[t0:t1]
	}
	var err error
	for _, v := range []struct {
		dst **device.Buffer
		src *device.Buffer
	}{{&mb.x, a.x}, {&mb.res, a.residual}, {&mb.out, a.h}} {
		if *v.dst, err = v.src.View(t0*H, (t1-t0)*H); err != nil {
			return microBatch{}, err
		}
	}
	return mb, nil
}

// layer enqueues layer l for micro-batch mb: the attention block and its all-reduce, then
// the MLP block and its all-reduce; compute kernels on cs, collectives on ms (the same
// stream when not overlapping).
func (rk *llamaRank) layer(cs, ms *device.Stream, l int, mb microBatch) error {
	if err := rk.attention(cs, l, mb); err != nil {
		return err
	}
	if err := rk.reduce(ms, mb, rk.layers[l].ffnNorm); err != nil {
		return err
	}
	if err := rk.mlp(cs, l, mb); err != nil {
		return err
	}
	return rk.reduce(ms, mb, rk.nextNorm(l))
}

// nextNorm is the RMSNorm weight that follows layer l's MLP: the next layer's attention
// norm, or the final norm.
func (rk *llamaRank) nextNorm(l int) *device.Buffer {
	if l+1 < len(rk.layers) {
		return rk.layers[l+1].attnNorm
	}
	return rk.norm
}

// reduce is the fused all-reduce + residual + RMSNorm that closes every block.
func (rk *llamaRank) reduce(s *device.Stream, mb microBatch, norm *device.Buffer) error {
	shape := fused.Shape{Tokens: mb.t1 - mb.t0, Hidden: rk.m.cfg.Hidden, Eps: float32(rk.m.cfg.RMSEps)}
	v := rk.m.opt.Fused.Resolve(rk.m.group.Comm(), rk.m.opt.FusedTable, shape.Tokens, shape.Hidden)
	return fused.AllReduceAddRMSNorm(rk.m.group.Rank(rk.rank), s, v, mb.x, mb.res, norm, mb.out, shape)
}

// attention enqueues the attention block of layer l for mb: column-parallel Q, K and V,
// RoPE, the KV cache write, paged GQA attention and the row-parallel o_proj into x.
func (rk *llamaRank) attention(s *device.Stream, l int, mb microBatch) error {
	m, cfg, p, a, ly := rk.m, rk.m.cfg, rk.m.plan, &rk.act, rk.layers[l]
	H, nq, nkv, hd := cfg.Hidden, p.HeadsPerRank, p.KVHeadsPerRank, cfg.HeadDim
	t0, t1, T := mb.t0, mb.t1, mb.t1-mb.t0
	h := a.h.Float32s()[t0*H : t1*H]
	q, att := a.q.Float32s()[t0*nq*hd:t1*nq*hd], a.attn.Float32s()[t0*nq*hd:t1*nq*hd]
	k, v := a.k.Float32s()[t0*nkv*hd:t1*nkv*hd], a.v.Float32s()[t0*nkv*hd:t1*nkv*hd]
	// RoPE reads and writes q and k, then k and v go to the cache; attention reads q, writes
	// out, and per cached position reads one K and one V row per token.
	kvElem := rk.kv.Config().ElemType().Size()
	ropeWork := device.Work{Class: device.ClassElementwise, Bytes: int64(T * ((2*(nq+nkv)+2*nkv)*4 + 2*nkv*kvElem) * hd)}
	attnWork := device.Work{Class: device.ClassAttention, Bytes: int64(2 * T * nq * hd * 4),
		ContextBytes: int64(T * 2 * nkv * hd * kvElem), ContextFLOPs: int64(T * 4 * nq * hd)}
	hin, quantizeH := rk.quantizeInput(s, "quantize_h", h, H, 0, t0, ly.q.w, ly.k.w, ly.v.w)
	ain, quantizeAttn := rk.quantizeInput(s, "quantize_attn", att, nq*hd, ly.o.lead, t0, ly.o.w)
	ops := []func() error{
		quantizeH,
		rk.linears(s, "qkv_proj", hin, ly.q.out(q), ly.k.out(k), ly.v.out(v)),
		rk.single(s, "rope+kv_write", ropeWork, func() error {
			if err := ly.normQK(q, k, float32(cfg.RMSEps)); err != nil {
				return err
			}
			if err := m.rope.Apply(cfg.RopeLayout, q, nq, k, nkv, mb.batch.Pos); err != nil {
				return err
			}
			return rk.kv.Write(l, mb.batch, k, v)
		}),
		rk.grid(s, "attention", T*nkv, T*nq*hd*cfg.ContextLength/2, attnWork, func(b device.Block, u0, u1 int) error {
			return layers.AttentionRange(att, q, nq, rk.kv, l, mb.batch, a.scratch[b.Index], u0, u1)
		}),
		quantizeAttn,
		rk.row(s, "o_proj", a.x.Float32s()[t0*H:t1*H], ain, ly.o),
	}
	return run(ops)
}

// normQK is Qwen3's per-head RMSNorm of q and k before RoPE (layers.RMSNorm over each
// HeadDim-wide head), where the layer has one (Arch.QKNorm).
func (ly *llamaLayer) normQK(q, k []float32, eps float32) error {
	if ly.qNorm == nil {
		return nil
	}
	if err := layers.RMSNorm(q, q, values(ly.qNorm), eps); err != nil {
		return err
	}
	return layers.RMSNorm(k, k, values(ly.kNorm), eps)
}

// values is an f32 buffer's elements (its storage may be longer).
func values(b *device.Buffer) []float32 { return b.Float32s()[:b.Len()] }

// mlp enqueues the MLP block of layer l for mb: column-parallel gate and up, SwiGLU, and
// the row-parallel down projection into x.
func (rk *llamaRank) mlp(s *device.Stream, l int, mb microBatch) error {
	a, ly, H, fr := &rk.act, rk.layers[l], rk.m.cfg.Hidden, rk.m.plan.FFNWidth(rk.rank)
	t0, t1 := mb.t0, mb.t1
	h := a.h.Float32s()[t0*H : t1*H]
	gate, up := a.gate.Float32s()[t0*fr:t1*fr], a.up.Float32s()[t0*fr:t1*fr]
	hin, quantizeH := rk.quantizeInput(s, "quantize_h", h, H, 0, t0, ly.gate.w, ly.up.w)
	gin, quantizeGate := rk.quantizeInput(s, "quantize_act", gate, fr, ly.down.lead, t0, ly.down.w)
	return run([]func() error{
		quantizeH,
		rk.linears(s, "gate_up_proj", hin, ly.gate.out(gate), ly.up.out(up)),
		// A grid over the tokens: as one block, a 128-token prompt's SwiGLU left the other
		// core idle for 1.7% of the prompt (docs/benchmarks/decode.md); one token stays one
		// block (under minBlockWork).
		rk.grid(s, "swiglu", t1-t0, (t1-t0)*fr, device.Work{Class: device.ClassElementwise, Bytes: int64(3 * len(gate) * 4)},
			func(_ device.Block, u0, u1 int) error {
				g, u := gate[u0*fr:u1*fr], up[u0*fr:u1*fr]
				return layers.SwiGLU(g, g, u)
			}),
		quantizeGate,
		rk.row(s, "down_proj", a.x.Float32s()[t0*H:t1*H], gin, ly.down),
	})
}

func run(ops []func() error) error {
	for _, op := range ops {
		if err := op(); err != nil {
			return err
		}
	}
	return nil
}

// candidates proposes each sampled token's best k tokens of the rank's vocabulary shard
// and all-gathers them; with k = 0 it all-gathers the whole logits shard instead. With
// st.Logprobs each row ends with the shard's log-sum-exp terms (layers.ShardLogSumExp).
func (rk *llamaRank) candidates(s *device.Stream, S int, st Step) error {
	a, p, vr, k := &rk.act, rk.m.plan, rk.head.Rows, st.Candidates
	logits := a.logits.Float32s()[:S*vr]
	comm := rk.m.group.Rank(rk.rank)
	w := st.stride(p.VocabPerRank)
	terms := func(row []float32, i int) {
		if st.Logprobs {
			m, sum := layers.ShardLogSumExp(logits[i*vr : (i+1)*vr])
			row[w-2], row[w-1] = m, float32(sum)
		}
	}
	if k == 0 {
		vpr := p.VocabPerRank
		packed := a.packed.Float32s()[:S*w]
		packWork := device.Work{Class: device.ClassSampling, Bytes: int64(S * (vr + w) * 4)}
		err := s.Launch(device.Kernel{Name: "pack_logits", Grid: 1, Work: packWork, Block: func(device.Block) error {
			if rk.rank == 0 { // every rank gathers the same rows
				rk.m.fullLogitRows.Add(int64(S))
			}
			for i := range S {
				row := packed[i*w : (i+1)*w]
				copy(row, logits[i*vr:(i+1)*vr])
				for j := vr; j < vpr; j++ {
					row[j] = float32(math.Inf(-1)) // vocabulary padding never wins
				}
				terms(row, i)
			}
			return nil
		}})
		if err != nil {
			return err
		}
		return comm.AllGather(s, a.packed, a.full, S*w)
	}
	cands := a.cands.Float32s()[:S*w]
	topkWork := device.Work{Class: device.ClassSampling, Bytes: int64(S * (vr + w) * 4)}
	err := s.Launch(device.Kernel{Name: "topk", Grid: 1, Work: topkWork, Block: func(device.Block) error {
		for i := range S {
			row, shard := cands[i*w:(i+1)*w], logits[i*vr:(i+1)*vr]
			terms(row, i) // the raw logits'
			top := a.top[:min(k, vr)]
			var got int
			var err error
			if st.Samplers == nil {
				got, err = layers.TopK(top, shard, rk.v0)
			} else {
				var m float32
				var sum float64
				got, m, sum, err = st.Samplers[i].Propose(top, shard, rk.v0)
				row[2*k], row[2*k+1] = m, float32(sum)
			}
			if err != nil {
				return err
			}
			for j := range k {
				c := layers.Candidate{Logit: float32(math.Inf(-1)), ID: -1}
				if j < got {
					c = a.top[j]
				}
				row[2*j], row[2*j+1] = c.Logit, float32(c.ID) // ids below 2²⁴ are exact in f32
			}
		}
		return nil
	}})
	if err != nil {
		return err
	}
	return comm.AllGather(s, a.cands, a.gathered, S*w)
}

// checkSamplers refuses samplers that do not match the step's sampled tokens or name a
// token outside the vocabulary.
func (m *Llama) checkSamplers(st Step) error {
	if st.Samplers == nil {
		return nil
	}
	if st.Candidates == 0 || len(st.Samplers) != len(st.Sample) {
		return fmt.Errorf("models: forward: %d samplers for %d sampled tokens and %d candidates: want one per sampled token, with candidates",
			len(st.Samplers), len(st.Sample), st.Candidates)
	}
	for i := range st.Samplers {
		sp := &st.Samplers[i]
		if (sp.Draw || sp.Terms) && !(sp.Temperature > 0 && !math.IsInf(float64(sp.Temperature), 0)) {
			return fmt.Errorf("models: forward: sampler %d draws or sums at temperature %v: want it > 0 and finite", i, sp.Temperature)
		}
		for _, a := range sp.Adjust {
			if a.ID < 0 || int(a.ID) >= m.cfg.Vocab {
				return fmt.Errorf("models: forward: sampler %d adjusts token %d, outside the vocabulary of %d", i, a.ID, m.cfg.Vocab)
			}
		}
	}
	return nil
}

// SamplerTerms returns, after a Forward with Samplers, every rank's ShardLogSumExpAt terms
// of each sampled token's adjusted logits, in rank order (m, sum pairs).
func (m *Llama) SamplerTerms(st Step) [][]float32 { return m.gathered(st).SamplerTerms() }

// Candidates returns, after a Forward with Candidates = k > 0, every rank's proposals for
// each sampled token (up to World·k of them).
func (m *Llama) Candidates(st Step) [][]layers.Candidate { return m.gathered(st).Candidates() }

// Logits returns, after a Forward with Candidates = 0, the full-vocabulary logits of each
// sampled token.
func (m *Llama) Logits(st Step) [][]float32 { return m.gathered(st).Logits() }

// FullLogitRows returns how many sampled tokens had their full-vocabulary logits
// all-gathered (Step.Candidates = 0), eagerly or in a replayed graph, since the model was
// built.
func (m *Llama) FullLogitRows() int64 { return m.fullLogitRows.Load() }

// LogSumExp returns, after a Forward with Logprobs, each sampled token's log Σ exp(logit)
// over the whole vocabulary, from the two terms every rank gathered for its shard
// (layers.CombineLogSumExp, in rank order): a token's log-probability is its logit minus
// this. No rank gathers the full logits for it.
func (m *Llama) LogSumExp(st Step) []float64 { return m.gathered(st).LogSumExp() }

// single returns an op that launches fn as a one-block kernel doing w.
func (rk *llamaRank) single(s *device.Stream, name string, w device.Work, fn func() error) func() error {
	return func() error {
		return s.Launch(device.Kernel{Name: name, Grid: 1, Work: w, Block: func(device.Block) error { return fn() }})
	}
}

// minBlockWork is the multiply-adds worth a block of their own: below it, waking another
// SM costs more than the work it takes over.
const minBlockWork = 1 << 15

// maxBlocks is the most blocks a kernel of grid runs on a rank of a group of world
// devices of sms SMs each, fixed when the rank loads. Where each of the group's SMs has a
// core of its own, big kernels split four blocks an SM: SMs take blocks as they come, so
// one that starts late (a worker woken after the others) takes fewer instead of holding
// the whole kernel back. Where the group's SMs outnumber the cores (TP 8 on two cores: 16
// SMs), a core that one rank's late SM leaves idle runs another rank's blocks, and every
// block more only costs its bookkeeping and restarts the kernel's streams of weights: one
// block an SM. Medium Q4_K decode, the two splits alternated in one process: at TP 8, one
// block an SM read +1.4% to +4.2% tok/s over four; at TP 1, -0.7% and -3.9%
// (docs/benchmarks/quantized.md, "One block an SM where the SMs outnumber the cores").
// Results do not depend on the split.
func maxBlocks(world, sms int) int {
	if world*sms > runtime.GOMAXPROCS(0) {
		return sms
	}
	return 4 * sms
}

// grid returns an op that launches fn over units [0, units) split among the SMs, at most
// one block per minBlockWork of work (work is the multiply-adds of all units); w is what
// the kernel costs.
func (rk *llamaRank) grid(s *device.Stream, name string, units, work int, w device.Work, fn func(b device.Block, u0, u1 int) error) func() error {
	blocks := max(1, min(rk.maxBlocks, units, work/minBlockWork))
	return func() error {
		return s.Launch(device.Kernel{Name: name, Grid: blocks, Work: w, Block: func(b device.Block) error {
			return fn(b, units*b.Index/b.Grid, units*(b.Index+1)/b.Grid)
		}})
	}
}

// linear returns an op that computes y = x·wᵀ (+ bias, where one is given: each block
// adds it to the outputs it computed, the epilogue of its GEMM) with w's output rows split
// among the SMs: from the f32 input, or from its quantization for w's type.
func (rk *llamaRank) linear(s *device.Stream, name string, y []float32, in linearInput, w layers.Matrix, bias *device.Buffer) func() error {
	return rk.linears(s, name, in, linearOut{y, w, bias})
}

// linearOut is one matrix of a launch of linears and the output it writes: y = x·wᵀ (+
// bias).
type linearOut struct {
	y    []float32
	w    layers.Matrix
	bias *device.Buffer
}

// linears returns an op that computes every output of outs from the same input in one
// kernel, as vLLM's merged QKV and gate/up projections do in one GEMM: its blocks split the
// matrices' row runs (quant.SplitRows) taken one matrix after another, so that a small
// matrix (a TP 8 shard's k_proj) shares the SMs with its neighbours instead of ending its
// own kernel on a barrier. The matrices stay apart in memory (each its own type), and each
// row is computed as linear computes it alone.
func (rk *llamaRank) linears(s *device.Stream, name string, in linearInput, outs ...linearOut) func() error {
	T := in.rows
	var gemm device.Work
	gemm.Class = device.ClassGEMM
	first := make([]int, len(outs)+1) // outs[i]'s units are [first[i], first[i+1])
	for i, o := range outs {
		inBytes := len(in.x) * 4
		if o.w.DType.Quantized() {
			inBytes = layers.QuantizedInputBytes(o.w, T)
		}
		gemm.Bytes += int64(o.w.Bytes() + inBytes + T*o.w.Rows*4)
		gemm.FLOPs += 2 * int64(T) * int64(o.w.Rows) * int64(o.w.Cols)
		if o.bias != nil {
			gemm.Bytes += int64(o.bias.Len()*4 + 2*T*o.w.Rows*4)
		}
		align := splitRows(o.w.DType, T)
		first[i+1] = first[i] + (o.w.Rows+align-1)/align
	}
	units := first[len(outs)]
	return rk.grid(s, name, units, int(gemm.FLOPs/2), gemm, func(_ device.Block, u0, u1 int) error {
		for i, o := range outs {
			lo, hi := max(u0, first[i]), min(u1, first[i+1])
			if lo >= hi {
				continue
			}
			align := splitRows(o.w.DType, T)
			if err := o.computeRows(in, (lo-first[i])*align, min((hi-first[i])*align, o.w.Rows)); err != nil {
				return err
			}
		}
		return nil
	})
}

// splitRows is the granularity at which linears splits the output rows of a matrix of
// type t among blocks, for T tokens: a quantized type's lockstep groups
// (quant.SplitRows); for float weights and several tokens the GEMM's tile
// (layers.GEMMTileRows), so that no block boundary cuts a tile whose padding the GEMM
// would multiply for nothing (medium's o_proj and down_proj at TP 1 split in 8 blocks of
// 256 rows: 21 tiles and one of 4 rows padded to 12 each, 3% more work); a single token's
// GEMV has no tiles and splits by the row.
func splitRows(t dtype.DType, T int) int {
	switch {
	case t.Quantized():
		return quant.SplitRows(t)
	case T > 1:
		return layers.GEMMTileRows
	}
	return 1
}

// computeRows computes output rows [o0, o1) of o for every token of in.
func (o linearOut) computeRows(in linearInput, o0, o1 int) error {
	w, y := o.w, o.y
	var err error
	if w.DType.Quantized() {
		err = layers.LinearQuantRows(y, in.q[quant.ActsFor(w.DType)], w, o0, o1)
	} else if w.DType == dtype.BF16 && in.xb != nil {
		err = layers.LinearBF16DotRows(y, in.xb, w, o0, o1)
	} else {
		err = layers.LinearRows(y, in.x, w, o0, o1)
	}
	if err != nil || o.bias == nil {
		return err
	}
	b := values(o.bias)
	for t := range in.rows {
		vec.AddF32(y[t*w.Rows+o0:t*w.Rows+o1], b[o0:o1])
	}
	return nil
}

// row returns the op of a row-parallel layer: its partial sums of y = x·Wᵀ, which the
// fused all-reduce that follows adds up.
func (rk *llamaRank) row(s *device.Stream, name string, y []float32, in linearInput, r rowLinear) func() error {
	return rk.linear(s, name, y, in, r.w, nil)
}
