package tp

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
)

// Shape is what sharding needs to know of a decoder model.
type Shape struct {
	Hidden, Intermediate, Heads, KVHeads, HeadDim, Vocab int
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
	// FFNPadded is the FFN width rounded up to a multiple of World; FFNPerRank columns of
	// it per rank. The padding columns are zero rows of gate/up and zero columns of down,
	// which contribute exactly nothing (SwiGLU of a zero gate is zero).
	FFNPadded, FFNPerRank int
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
	p.FFNPadded = (s.Intermediate + world - 1) / world * world
	p.FFNPerRank = p.FFNPadded / world
	if s.KVHeads >= world {
		p.KVHeadsPerRank, p.KVReplicas = s.KVHeads/world, 1
	} else {
		p.KVHeadsPerRank, p.KVReplicas = 1, world/s.KVHeads
	}
	p.VocabPadded = (s.Vocab + world - 1) / world * world
	p.VocabPerRank = p.VocabPadded / world
	return p, nil
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

// FFN returns the padded intermediate columns [f0, f1) rank r owns; columns at or past
// Shape.Intermediate are padding.
func (p Plan) FFN(r int) (f0, f1 int) { return r * p.FFNPerRank, (r + 1) * p.FFNPerRank }

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
	if p.FFNPadded != p.Shape.Intermediate {
		ffn += fmt.Sprintf(" (padded %d→%d)", p.Shape.Intermediate, p.FFNPadded)
	}
	return fmt.Sprintf("TP=%d: %d query heads/rank, %s, %s, vocab %d/rank (padded %d→%d)",
		p.World, p.HeadsPerRank, kv, ffn, p.VocabPerRank, p.Shape.Vocab, p.VocabPadded)
}
