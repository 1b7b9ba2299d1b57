package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWinnerMatchesReference: a shard's Gumbel-max winner is the plain loop's over every
// token of the shard, ties to the lower id, −Inf never chosen unless alone; shards of up
// to 1100 tokens, so the draws come from several fillPhiloxPlanes calls.
func TestWinnerMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		shard := make([]float32, 1+r.IntN(1100)) // past a philoxPlanes of 256 tokens
		for i := range shard {
			shard[i] = float32(math.Round(r.NormFloat64()*8) / 4)
			if r.IntN(10) == 0 {
				shard[i] = float32(math.Inf(-1))
			}
		}
		v0 := r.IntN(1000)
		rs := RowSampler{Temperature: 0.2 + 2*r.Float32(), Seed: r.Uint64(), Pos: uint64(trial), Draw: true}
		want, best := Candidate{shard[0], int32(v0)}, math.Inf(-1)
		for i, l := range shard {
			if math.IsInf(float64(l), -1) {
				continue
			}
			if s := float64(l)/float64(rs.Temperature) + Gumbel(rs.Seed, rs.Pos, int32(v0+i)); s > best {
				want, best = Candidate{l, int32(v0 + i)}, s
			}
		}
		got, err := rs.Winner(shard, v0)
		require.NoError(t, err)
		require.Equal(t, want, got, "trial %d", trial)
	}
}

// TestPropose: the winner first (Draw), then the best of the adjusted shard, and the
// terms at the temperature; without Draw the best only.
func TestPropose(t *testing.T) {
	raw := []float32{0.5, 2, -1, 3, 1, 0}
	rs := RowSampler{Temperature: 0.7, Seed: 9, Pos: 4, Draw: true, Terms: true, RepetitionPenalty: 2,
		Adjust: []LogitAdjust{{ID: 13, Bias: 5}, {ID: 11, Mask: true}, {ID: 12, Repeat: true}, {ID: 99, Bias: 100}}}
	adjusted := []float32{0.5, float32(math.Inf(-1)), -2, 8, 1, 0} // ids 10..15; 99 is another shard's
	shard := slices.Clone(raw)
	dst := make([]Candidate, 3)
	n, m, sum, err := rs.Propose(dst, shard, 10)
	require.NoError(t, err)
	require.Equal(t, adjusted, shard)
	win, err := rs.Winner(adjusted, 10)
	require.NoError(t, err)
	best := make([]Candidate, 2)
	_, err = TopK(best, adjusted, 10)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, append([]Candidate{win}, best...), dst)
	wm, wsum := ShardLogSumExpAt(adjusted, 0.7)
	require.Equal(t, wm, m)
	require.Equal(t, wsum, sum)

	rs.Draw, rs.Terms = false, false
	shard = slices.Clone(raw)
	n, m, sum, err = rs.Propose(dst, shard, 10)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	top := make([]Candidate, 3)
	_, err = TopK(top, adjusted, 10)
	require.NoError(t, err)
	require.Equal(t, top, dst)
	require.True(t, math.IsInf(float64(m), -1))
	require.Zero(t, sum)
}

func TestWinnerRefusesBadInput(t *testing.T) {
	_, err := (&RowSampler{Temperature: 1}).Winner(nil, 0)
	require.ErrorContains(t, err, "gumbel-max: 0 logits")
	_, err = (&RowSampler{}).Winner([]float32{1}, 0)
	require.ErrorContains(t, err, "at temperature 0")
}

// BenchmarkWinner: a rank's Gumbel-max draw over its shard (standard normal logits times
// 2) against ShardLogSumExpAt's one pass of exp, the cost of a sampled row on a rank.
func BenchmarkWinner(b *testing.B) {
	for _, n := range []int{512, 4000, 32000} { // 512: demo's 4096 tokens at TP 8
		r := rand.New(rand.NewPCG(3, uint64(n)))
		shard := make([]float32, n)
		for i := range shard {
			shard[i] = float32(r.NormFloat64() * 2)
		}
		rs := RowSampler{Temperature: 1, Draw: true}
		b.Run(fmt.Sprintf("shard=%d/winner", n), func(b *testing.B) {
			for b.Loop() {
				rs.Pos++
				if _, err := rs.Winner(shard, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("shard=%d/logsumexp", n), func(b *testing.B) {
			for b.Loop() {
				ShardLogSumExpAt(shard, 1)
			}
		})
	}
}
