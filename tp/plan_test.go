package tp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPlan(t *testing.T) {
	llama3_70b := Shape{Hidden: 8192, Intermediate: 28672, Heads: 64, KVHeads: 8, HeadDim: 128, Vocab: 128256}
	tiny := Shape{Hidden: 256, Intermediate: 768, Heads: 8, KVHeads: 4, HeadDim: 32, Vocab: 510}

	p, err := NewPlan(8, llama3_70b)
	require.NoError(t, err)
	require.Equal(t, 8, p.HeadsPerRank)
	require.Equal(t, 1, p.KVHeadsPerRank)
	require.Equal(t, 1, p.KVReplicas)
	k0, k1 := p.KVHeads(3)
	require.Equal(t, []int{3, 4}, []int{k0, k1})

	p, err = NewPlan(8, tiny) // 4 KV heads on 8 ranks: each replicated twice
	require.NoError(t, err)
	require.Equal(t, 2, p.KVReplicas)
	for r := range 8 {
		h0, h1 := p.QHeads(r)
		k0, k1 := p.KVHeads(r)
		require.Equal(t, 1, k1-k0)
		// every query head of the rank maps onto the rank's KV head (8 heads / 4 KV heads)
		for h := h0; h < h1; h++ {
			require.Equal(t, k0, h/(tiny.Heads/tiny.KVHeads), "rank %d head %d", r, h)
		}
	}
	require.Equal(t, 512, p.VocabPadded)
	require.Equal(t, 64, p.VocabPerRank)
	v0, v1 := p.VocabRows(7)
	require.Equal(t, []int{448, 512}, []int{v0, v1})
	require.Contains(t, p.String(), "replicated on 2 ranks")

	p, err = NewPlan(2, tiny)
	require.NoError(t, err)
	require.Equal(t, 2, p.KVHeadsPerRank)
	f0, f1 := p.FFN(1)
	require.Equal(t, []int{384, 768}, []int{f0, f1})
	require.NotContains(t, p.String(), "FFN 384/rank (padded")
}

// TestPlanPadsTheFFN: an FFN width the ranks do not divide is padded to the next multiple
// (stories260K's 172 over 8 ranks: 22 a rank, the last rank's last 4 columns padding).
func TestPlanPadsTheFFN(t *testing.T) {
	p, err := NewPlan(8, Shape{Hidden: 64, Intermediate: 172, Heads: 8, KVHeads: 4, HeadDim: 8, Vocab: 512})
	require.NoError(t, err)
	require.Equal(t, 176, p.FFNPadded)
	require.Equal(t, 22, p.FFNPerRank)
	f0, f1 := p.FFN(7)
	require.Equal(t, []int{154, 176}, []int{f0, f1})
	require.Contains(t, p.String(), "FFN 22/rank (padded 172→176)")
}

func TestPlanRefusesImpossible(t *testing.T) {
	ok := Shape{Hidden: 256, Intermediate: 768, Heads: 8, KVHeads: 4, HeadDim: 32, Vocab: 512}
	cases := []struct {
		world int
		shape func(Shape) Shape
		want  string
	}{
		{17, func(s Shape) Shape { return s }, "world size must be 1 to 16"},
		{0, func(s Shape) Shape { return s }, "world size must be 1 to 16"},
		{3, func(s Shape) Shape { return s }, "8 attention heads do not split evenly"},
		{8, func(s Shape) Shape { s.KVHeads = 3; s.Heads = 24; return s }, "3 KV heads cannot be replicated evenly"},
		{2, func(s Shape) Shape { s.KVHeads = 3; return s }, "8 query heads do not group evenly over 3 KV heads"},
		{2, func(s Shape) Shape { s.Vocab = 0; return s }, "every dimension must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			_, err := NewPlan(tc.world, tc.shape(ok))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestPlanSplitsFFNInBlocks: an FFN of whole blocks, at least one a rank, is dealt out in
// whole blocks, the first ranks holding one more (medium's 5632 = 22 blocks of 256 over 8
// ranks: 3 blocks on ranks 0-5, 2 on ranks 6-7), with no padding; the widths sum to the
// FFN's and differ by at most one block.
func TestPlanSplitsFFNInBlocks(t *testing.T) {
	shape := func(ffn, block int) Shape {
		return Shape{Hidden: 256, Intermediate: ffn, Heads: 48, KVHeads: 48, HeadDim: 16, Vocab: 512, FFNBlock: block}
	}
	p, err := NewPlan(8, shape(5632, 256))
	require.NoError(t, err)
	require.Equal(t, 5632, p.FFNPadded)
	require.Equal(t, 768, p.FFNPerRank)
	var widths []int
	for r := range 8 {
		widths = append(widths, p.FFNWidth(r))
	}
	require.Equal(t, []int{768, 768, 768, 768, 768, 768, 512, 512}, widths)
	f0, f1 := p.FFN(6)
	require.Equal(t, []int{4608, 5120}, []int{f0, f1})
	require.Contains(t, p.String(), "FFN 768 or 512/rank (in blocks of 256)")
	require.NotContains(t, p.String(), "padded 5632")

	for _, tc := range []struct{ world, ffn, block int }{
		{8, 5632, 256}, {8, 2816, 256}, {8, 2048, 256}, {2, 768, 256}, {4, 1280, 256}, {16, 4096 + 256, 256},
		{3, 224, 32}, {8, 5632, 32}, {8, 8 * 32, 32}, {2, 96, 32},
	} {
		p, err := NewPlan(tc.world, shape(tc.ffn, tc.block))
		require.NoError(t, err)
		require.Equal(t, tc.ffn, p.FFNPadded, "%+v", tc)
		next, small, large := 0, tc.ffn, 0
		for r := range tc.world {
			f0, f1 := p.FFN(r)
			require.Equal(t, next, f0, "%+v rank %d: the ranks tile the FFN", tc, r)
			require.Zero(t, f0%tc.block, "%+v rank %d", tc, r)
			require.Zero(t, f1%tc.block, "%+v rank %d", tc, r)
			require.Equal(t, f1-f0, p.FFNWidth(r))
			require.LessOrEqual(t, f1-f0, p.FFNPerRank)
			if r > 0 {
				require.LessOrEqual(t, f1-f0, p.FFNWidth(r-1), "%+v: wider ranks first", tc)
			}
			small, large, next = min(small, f1-f0), max(large, f1-f0), f1
		}
		require.Equal(t, tc.ffn, next, "%+v: the widths sum to the FFN's", tc)
		require.Equal(t, p.FFNPerRank, large, "%+v", tc)
		require.LessOrEqual(t, large-small, tc.block, "%+v", tc)
	}
}

// TestPlanFFNFallsBackToTheEvenSplit: where the blocks do not tile the FFN, or there are
// fewer blocks than ranks, or the granule is any column, the split is the even (padded)
// one of a plan without a granule; and where that even split already falls on blocks
// (Q8_0's 32 into 5632/8 = 704), the block split is the same.
func TestPlanFFNFallsBackToTheEvenSplit(t *testing.T) {
	shape := func(ffn, block int) Shape {
		return Shape{Hidden: 64, Intermediate: ffn, Heads: 48, KVHeads: 48, HeadDim: 8, Vocab: 512, FFNBlock: block}
	}
	for _, tc := range []struct{ world, ffn, block int }{
		{8, 172, 32}, {8, 192, 32}, {8, 768, 256}, {8, 5632, 0}, {8, 5632, 1}, {8, 5632, 32}, {3, 100, 32},
	} {
		p, err := NewPlan(tc.world, shape(tc.ffn, tc.block))
		require.NoError(t, err)
		even, err := NewPlan(tc.world, shape(tc.ffn, 0))
		require.NoError(t, err)
		require.Equal(t, even.FFNPadded, p.FFNPadded, "%+v", tc)
		require.Equal(t, even.FFNPerRank, p.FFNPerRank, "%+v", tc)
		require.Equal(t, (tc.ffn+tc.world-1)/tc.world, p.FFNPerRank, "%+v", tc)
		for r := range tc.world {
			f0, f1 := p.FFN(r)
			e0, e1 := even.FFN(r)
			require.Equal(t, []int{r * even.FFNPerRank, (r + 1) * even.FFNPerRank}, []int{e0, e1}, "%+v rank %d", tc, r)
			require.Equal(t, []int{e0, e1}, []int{f0, f1}, "%+v rank %d", tc, r)
		}
		require.NotContains(t, p.String(), " or ")
	}
}
