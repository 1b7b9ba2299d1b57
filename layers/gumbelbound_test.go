package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGumbelBelow: every entry's noise is below its gap, and the next draw up's is
// within a hair of it, so the bound rules out all it can.
func TestGumbelBelow(t *testing.T) {
	for k, u := range gumbelBelow {
		gap := float64(k) * gapStep
		require.Less(t, gumbel(u), gap-gapMargin/2, "entry %d", k)
		require.Greater(t, gumbel(u+1e-6*(1-u)), gap-1e-5, "entry %d is looser than it need be", k)
	}
}

// TestMayWinNeverRulesOutAWinner: a token mayWin rules out scores no more than best,
// over gaps around every entry and draws around its bound.
func TestMayWinNeverRulesOutAWinner(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 200000 {
		x := r.NormFloat64() * 10
		k := r.IntN(len(gumbelBelow) + 8)
		best := x + float64(k)*gapStep + (r.Float64()-0.5)*1e-6
		u := min(gumbelBelow[min(k, len(gumbelBelow)-1)]+(r.Float64()-0.5)*1e-6, math.Nextafter(1, 0))
		if !mayWin(x, u, best) {
			require.LessOrEqual(t, x+gumbel(u), best, "x %v, u %v, best %v", x, u, best)
		}
	}
	require.True(t, mayWin(0, 0.01, math.Inf(-1)), "the first token always may win")
}

// TestWinnerNoisesFewTokens: over a shard of 4096 normal logits the winner takes the
// noise's logarithms of a few percent of the tokens, and is the plain loop's, for a
// flat and a peaked row.
func TestWinnerNoisesFewTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, spread := range []float64{0.5, 1, 4} {
		shard := make([]float32, 4096)
		for i := range shard {
			shard[i] = float32(r.NormFloat64() * spread)
		}
		for pos := range uint64(20) {
			rs := RowSampler{Temperature: 1, Seed: 11, Pos: pos, Draw: true}
			want, best := Candidate{}, math.Inf(-1)
			for i, l := range shard {
				if s := Score(l, 1, rs.Seed, pos, int32(i)); s > best {
					want, best = Candidate{l, int32(i)}, s
				}
			}
			got, noised, err := rs.winner(shard, 0)
			require.NoError(t, err)
			require.Equal(t, want, got, "spread %v, pos %d", spread, pos)
			require.Less(t, noised, len(shard)/20, "spread %v, pos %d: noise of %d tokens of %d", spread, pos, noised, len(shard))
		}
	}
}
