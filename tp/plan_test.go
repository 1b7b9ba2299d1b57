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
