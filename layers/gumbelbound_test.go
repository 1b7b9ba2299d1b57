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

// TestNoiseBound: every bucket's largest draw has noise below its bound (so every draw
// of the bucket has: the noise is monotone in the draw), and the bound is the least step
// gumbelBelow allows for it.
func TestNoiseBound(t *testing.T) {
	for i, bound := range noiseBound {
		top := uint32(i+1)<<(32-noiseBucketBits) - 1
		if math.IsInf(bound, 1) {
			require.Greater(t, unit(top), gumbelBelow[len(gumbelBelow)-1], "bucket %d", i)
			continue
		}
		require.Less(t, gumbel(unit(top)), bound-gapMargin/2, "bucket %d", i)
		if k := int(bound / gapStep); k > 0 {
			require.Greater(t, unit(top), gumbelBelow[k-1], "bucket %d: bound %v is looser than it need be", i, bound)
		}
	}
}

// TestMayWinNeverRulesOutAWinner: a token mayWin rules out scores no more than best,
// over gaps around every step and draws around every bucket's edges and every
// gumbelBelow entry.
func TestMayWinNeverRulesOutAWinner(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 200000 {
		x := r.NormFloat64() * 10
		k := r.IntN(len(gumbelBelow) + 8)
		best := x + float64(k)*gapStep + (r.Float64()-0.5)*1e-6
		var w uint32
		switch r.IntN(3) {
		case 0: // near a bucket's edge
			w = uint32(r.IntN(len(noiseBound)))<<(32-noiseBucketBits) + uint32(r.IntN(64)) - 32
		case 1: // near an entry's draw
			u := gumbelBelow[min(k, len(gumbelBelow)-1)] + (r.Float64()-0.5)*1e-6
			w = uint32(min(max(u*(1<<32), 0), 1<<32-1))
		default:
			w = r.Uint32()
		}
		if !mayWin(x, w, best) {
			require.LessOrEqual(t, x+gumbel(unit(w)), best, "x %v, w %#x, best %v", x, w, best)
		}
	}
	require.True(t, mayWin(0, 1<<30, math.Inf(-1)), "the first token always may win")
	require.True(t, mayWin(-1e30, ^uint32(0), 0), "a draw within 1.1e-7 of 1 is never ruled out")
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
