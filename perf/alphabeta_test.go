package perf

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
)

// The numbers of DESIGN.md's α-β table: n = 8, β = 450e9 B/s, α = 1.5 µs.
const (
	designN     = 8
	designAlpha = 1500 * time.Nanosecond
	designBeta  = 450e9
	modelKiB    = 1 << 10
	modelMiB    = 1 << 20
)

// designTable is DESIGN.md's table in µs, with its "fastest without NVLS" column, and the
// seed's star baseline, which DESIGN.md does not list: 3α + 2(n-1)·S/β, its registry row's.
var designTable = []struct {
	bytes                                    int64
	ring, tree, oneShot, twoShot, nvls, star float64
	fastestWithoutNVLS                       comm.Algo
}{
	{16 * modelKiB, 21.1, 9.1, 3.3, 6.1, 3.0, 5.0, comm.OneShot},
	{256 * modelKiB, 22.0, 10.2, 7.1, 7.0, 3.6, 12.7, comm.TwoShot},
	{1 * modelMiB, 25.1, 13.7, 19.3, 10.1, 5.3, 37.1, comm.TwoShot},
	{8 * modelMiB, 53.6, 46.3, 133.5, 38.6, 21.6, 265.5, comm.TwoShot},
	{64 * modelMiB, 282.0, 307.3, 1046.9, 267.0, 152.1, 2092.3, comm.TwoShot},
}

func modelMicros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func TestModelTimeReproducesDesignTable(t *testing.T) {
	for _, row := range designTable {
		t.Run(modelSizeName(row.bytes), func(t *testing.T) {
			want := map[comm.Algo]float64{comm.Ring: row.ring, comm.OneShot: row.oneShot, comm.TwoShot: row.twoShot, comm.NVLS: row.nvls, comm.Lamport: row.oneShot, comm.Tree: row.tree, comm.Star: row.star}
			best, bestT := comm.Auto, time.Duration(0)
			for _, a := range comm.Algos {
				got, err := alphaBeta(designAlpha, designBeta).Time(allReduce(a, designN, row.bytes))
				require.NoError(t, err)
				// The table prints one decimal: the model must round to it.
				require.InDelta(t, want[a], math.Round(modelMicros(got)*10)/10, 1e-9, "%v", a)
				if a != comm.NVLS && a != comm.Lamport && a != comm.Tree && (best == comm.Auto || got < bestT) {
					best, bestT = a, got
				}
			}
			require.Equal(t, row.fastestWithoutNVLS, best, "fastest without NVLS")
		})
	}
}

func modelSizeName(b int64) string {
	if b >= modelMiB {
		return fmt.Sprintf("%dMiB", b/modelMiB)
	}
	return fmt.Sprintf("%dKiB", b/modelKiB)
}

func TestModelTimeOneRankIsFree(t *testing.T) {
	for _, a := range comm.Algos {
		got, err := alphaBeta(designAlpha, designBeta).Time(allReduce(a, 1, 64*modelMiB))
		require.NoError(t, err)
		require.Zero(t, got, "%v", a)
	}
}

func TestModelTimeRejects(t *testing.T) {
	tests := []struct {
		name  string
		algo  comm.Algo
		n     int
		bytes int64
		alpha time.Duration
		beta  float64
		want  string
	}{
		{"auto", comm.Auto, 8, 1, designAlpha, designBeta, "auto"},
		{"unknown algo", comm.Algo(99), 8, 1, designAlpha, designBeta, "algo(99)"},
		{"zero ranks", comm.Ring, 0, 1, designAlpha, designBeta, "n = 0"},
		{"negative bytes", comm.Ring, 8, -1, designAlpha, designBeta, "-1 bytes"},
		{"negative alpha", comm.Ring, 8, 1, -time.Nanosecond, designBeta, "alpha"},
		{"zero beta", comm.Ring, 8, 1, designAlpha, 0, "beta"},
		{"NaN beta", comm.Ring, 8, 1, designAlpha, math.NaN(), "beta"},
		{"Inf beta", comm.Ring, 8, 1, designAlpha, math.Inf(1), "beta"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := alphaBeta(tc.alpha, tc.beta).Time(allReduce(tc.algo, tc.n, tc.bytes))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestTreeModel: the tree takes ⌊log2 n⌋ levels up and down (6 ranks: 4 → {2, 6} over
// positions 1..6, two levels; 8 ranks three) and never beats the best of one-shot and
// two-shot on one node (it ties one-shot at n = 3).
func TestTreeModel(t *testing.T) {
	six, err := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.Tree, 6, 0))
	require.NoError(t, err)
	require.Equal(t, 6*time.Microsecond, six)
	eight, err := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.Tree, 8, 0))
	require.NoError(t, err)
	require.Equal(t, 9*time.Microsecond, eight)
	for n := 2; n <= 8; n++ {
		for b := 0; b <= 36; b += 2 {
			tree, _ := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.Tree, n, int64(1)<<b))
			one, _ := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.OneShot, n, int64(1)<<b))
			two, _ := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.TwoShot, n, int64(1)<<b))
			require.GreaterOrEqual(t, tree, min(one, two), "n = %d, %d bytes", n, int64(1)<<b)
		}
	}
}

func TestOneShotTwoShotCrossover(t *testing.T) {
	s := oneShotTwoShotCrossover(designN, designAlpha, designBeta)
	require.InDelta(t, 257e3, s, 0.5e3, "≈ 257 KB at n = 8")
	require.InDelta(t, 2*1.5e-6*450e9/(7*0.75), s, 1e-6)

	// Find it numerically from the α-β model: the smallest size at which two-shot is faster.
	faster := func(b int64) bool {
		one, err := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.OneShot, designN, b))
		require.NoError(t, err)
		two, err := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.TwoShot, designN, b))
		require.NoError(t, err)
		return two < one
	}
	lo, hi := int64(1), int64(64*modelMiB) // faster(lo) false, faster(hi) true
	require.False(t, faster(lo))
	require.True(t, faster(hi))
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if faster(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	// Nanosecond rounding moves the numeric crossover by at most ~1 ns of slope
	// (5.25 B / 450e9 B/s per byte): well under 0.1%.
	require.InEpsilon(t, s, float64(hi), 1e-3)

	// One-shot is faster just below, two-shot just above, at other world sizes too.
	for _, n := range []int{3, 4, 6, 8} {
		s := oneShotTwoShotCrossover(n, designAlpha, designBeta)
		below, above := int64(s*0.99), int64(s*1.01)
		one, _ := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.OneShot, n, below))
		two, _ := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.TwoShot, n, below))
		require.Less(t, one, two, "n = %d below S*", n)
		one, _ = alphaBeta(designAlpha, designBeta).Time(allReduce(comm.OneShot, n, above))
		two, _ = alphaBeta(designAlpha, designBeta).Time(allReduce(comm.TwoShot, n, above))
		require.Less(t, two, one, "n = %d above S*", n)
	}
}

func TestTwoRanksOneShotNeverLoses(t *testing.T) {
	require.True(t, math.IsInf(oneShotTwoShotCrossover(2, designAlpha, designBeta), 1))
	require.True(t, math.IsInf(oneShotTwoShotCrossover(1, designAlpha, designBeta), 1))
	for b := 0; b <= 40; b++ {
		bytes := int64(1) << b
		one, err := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.OneShot, 2, bytes))
		require.NoError(t, err)
		for _, a := range []comm.Algo{comm.Ring, comm.TwoShot} {
			other, err := alphaBeta(designAlpha, designBeta).Time(allReduce(a, 2, bytes))
			require.NoError(t, err)
			require.LessOrEqual(t, one, other, "%v at %d bytes", a, bytes)
		}
	}
}

func TestModelTimeSaturates(t *testing.T) {
	d, err := alphaBeta(time.Second, 1).Time(allReduce(comm.OneShot, 8, math.MaxInt64))
	require.NoError(t, err)
	require.Equal(t, time.Duration(math.MaxInt64), d)
}

// TestRingBusBWIsBeta: a ring at full link rate shows nccl-tests' busbw ≈ β for large
// messages.
func TestRingBusBWIsBeta(t *testing.T) {
	d, err := alphaBeta(designAlpha, designBeta).Time(allReduce(comm.Ring, 8, 1<<34))
	require.NoError(t, err)
	algbw := float64(1<<34) / d.Seconds()
	require.InEpsilon(t, designBeta, comm.BusBW(algbw, 8), 1e-3)
}
