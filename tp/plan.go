package tp

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
)

// Shape is what sharding needs to know of a decoder model.
type Shape struct {
	Hidden, Intermediate, Heads, KVHeads, HeadDim, Vocab int
	// FFNBlock is the granule of the FFN split: the block size of the row-parallel down
	// projection's weight type (256 for the K-quants), so that no rank's columns cut a
	// block. 0 or 1: any column.
	FFNBlock int
}

// Plan says which part of every sharded weight each rank of a world owns, the Megatron
// layout that vLLM uses: QKV and gate/up are column-parallel (split by output rows here,
// weights being [out, in]), o_proj and down are row-parallel (split by input columns), the
// embedding and LM head are vocabulary-parallel.
type Plan struct {
	World int
	Shape Shape
	// HeadsPerRank query heads per rank; KVHeadsPerRank KV heads per rank (1 when
	// replicated); KVReplicas is how many ranks hold a copy of each KV head.
	HeadsPerRank, KVHeadsPerRank, KVReplicas int
	// The FFN split: where the width is whole blocks of Shape.FFNBlock and there are at
	// least World of them, the blocks are dealt out as evenly as whole blocks allow, the
	// first FFNWideRanks ranks holding one block more than the others (5632 = 22 blocks of
	// 256 over 8 ranks: ranks 0-5 hold 768 columns, ranks 6-7 hold 512), with no padding.
	// Otherwise the width is rounded up to a multiple of World and split evenly
	// (FFNWideRanks = World); the padding columns are zero rows of gate/up and zero
	// columns of down, which contribute exactly nothing (SwiGLU of a zero gate is zero).
	// FFNPadded is the width split (Intermediate but for padding); FFNPerRank the largest
	// rank's width, which buffers are sized by (FFNWidth(r) is rank r's own); FFNBlock the
	// granule the split is in (1 for the even split).
	FFNPadded, FFNPerRank, FFNBlock, FFNWideRanks int
	// VocabPadded is the vocabulary rounded up to a multiple of World; VocabPerRank rows
	// of it per rank (the padding rows hold no token and never win sampling).
	VocabPadded, VocabPerRank int
}

// NewPlan shards shape over world ranks, or says why it cannot.
func NewPlan(world int, s Shape) (Plan, error) {
	fail := func(format string, args ...any) (Plan, error) {
		return Plan{}, fmt.Errorf("tp: cannot shard over %d ranks: %s", world, fmt.Sprintf(format, args...))
	}
	switch {
	case world < 1 || world > device.MaxNodeDevices:
		return fail("the world size must be 1 to %d", device.MaxNodeDevices)
	case s.Hidden < 1 || s.Intermediate < 1 || s.Heads < 1 || s.KVHeads < 1 || s.HeadDim < 1 || s.Vocab < 1:
		return fail("every dimension must be positive (%+v)", s)
	case s.Heads%s.KVHeads != 0:
		return fail("%d query heads do not group evenly over %d KV heads", s.Heads, s.KVHeads)
	case s.Heads%world != 0:
		return fail("%d attention heads do not split evenly", s.Heads)
	case s.KVHeads >= world && s.KVHeads%world != 0:
		return fail("%d KV heads do not split evenly", s.KVHeads)
	case s.KVHeads < world && world%s.KVHeads != 0:
		return fail("%d KV heads cannot be replicated evenly (the world size must be a multiple of them)", s.KVHeads)
	}
	p := Plan{World: world, Shape: s, HeadsPerRank: s.Heads / world}
	p.splitFFN()
	if s.KVHeads >= world {
		p.KVHeadsPerRank, p.KVReplicas = s.KVHeads/world, 1
	} else {
		p.KVHeadsPerRank, p.KVReplicas = 1, world/s.KVHeads
	}
	p.VocabPadded = (s.Vocab + world - 1) / world * world
	p.VocabPerRank = p.VocabPadded / world
	return p, nil
}

// splitFFN sets the FFN split (see Plan.FFNPadded).
func (p *Plan) splitFFN() {
	width, world, block := p.Shape.Intermediate, p.World, max(p.Shape.FFNBlock, 1)
	if block > 1 && width%block == 0 && width/block >= world {
		blocks := width / block
		p.FFNPadded, p.FFNBlock = width, block
		p.FFNPerRank = (blocks + world - 1) / world * block
		p.FFNWideRanks = blocks % world
		if p.FFNWideRanks == 0 { // the even split falls on blocks
			p.FFNWideRanks = world
		}
		return
	}
	p.FFNPadded = (width + world - 1) / world * world
	p.FFNPerRank, p.FFNBlock, p.FFNWideRanks = p.FFNPadded/world, 1, world
}

// QHeads returns the query heads [h0, h1) rank r owns.
func (p Plan) QHeads(r int) (h0, h1 int) { return r * p.HeadsPerRank, (r + 1) * p.HeadsPerRank }

// KVHeads returns the KV heads [k0, k1) rank r holds: its own share, or the one head its
// query heads attend with when KV heads are replicated.
func (p Plan) KVHeads(r int) (k0, k1 int) {
	if p.KVReplicas == 1 {
		return r * p.KVHeadsPerRank, (r + 1) * p.KVHeadsPerRank
	}
	k := r / p.KVReplicas
	return k, k + 1
}

// FFN returns the (padded) intermediate columns [f0, f1) rank r owns; columns at or past
// Shape.Intermediate are padding. The FFNWideRanks first ranks hold FFNPerRank columns,
// the others one FFNBlock fewer.
func (p Plan) FFN(r int) (f0, f1 int) { return p.ffnStart(r), p.ffnStart(r + 1) }

func (p Plan) ffnStart(r int) int { return r*p.FFNPerRank - max(r-p.FFNWideRanks, 0)*p.FFNBlock }

// FFNWidth returns how many intermediate columns rank r owns (padding included).
func (p Plan) FFNWidth(r int) int {
	f0, f1 := p.FFN(r)
	return f1 - f0
}

// VocabRows returns the padded vocabulary rows [v0, v1) rank r owns; rows at or past
// Shape.Vocab are padding.
func (p Plan) VocabRows(r int) (v0, v1 int) { return r * p.VocabPerRank, (r + 1) * p.VocabPerRank }

// String describes the plan in one line for logs and reports.
func (p Plan) String() string {
	kv := fmt.Sprintf("%d KV heads/rank", p.KVHeadsPerRank)
	if p.KVReplicas > 1 {
		kv = fmt.Sprintf("1 KV head/rank, each replicated on %d ranks", p.KVReplicas)
	}
	ffn := fmt.Sprintf("FFN %d/rank", p.FFNPerRank)
	if p.FFNWideRanks < p.World {
		ffn = fmt.Sprintf("FFN %d or %d/rank (in blocks of %d)", p.FFNPerRank, p.FFNPerRank-p.FFNBlock, p.FFNBlock)
	}
	if p.FFNPadded != p.Shape.Intermediate {
		ffn += fmt.Sprintf(" (padded %d→%d)", p.Shape.Intermediate, p.FFNPadded)
	}
	return fmt.Sprintf("TP=%d: %d query heads/rank, %s, %s, vocab %d/rank (padded %d→%d)",
		p.World, p.HeadsPerRank, kv, ffn, p.VocabPerRank, p.Shape.Vocab, p.VocabPadded)
}
