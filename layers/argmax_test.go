package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

var nan = float32(math.NaN())

func TestCandidateBefore(t *testing.T) {
	for _, tc := range []struct {
		a, b Candidate
		want bool
	}{
		{Candidate{2, 5}, Candidate{1, 0}, true},
		{Candidate{1, 0}, Candidate{2, 5}, false},
		{Candidate{1, 3}, Candidate{1, 4}, true},
		{Candidate{1, 4}, Candidate{1, 3}, false},
		{Candidate{float32(math.Copysign(0, -1)), 1}, Candidate{0, 2}, true},
		{Candidate{float32(math.Inf(-1)), 9}, Candidate{nan, 0}, true},
		{Candidate{nan, 0}, Candidate{float32(math.Inf(-1)), 9}, false},
		{Candidate{nan, 1}, Candidate{nan, 2}, true},
		{Candidate{1, 1}, Candidate{1, 1}, false},
	} {
		require.Equal(t, tc.want, tc.a.Before(tc.b), "%v before %v", tc.a, tc.b)
	}
}

func TestArgmax(t *testing.T) {
	for _, tc := range []struct {
		name   string
		logits []float32
		v0     int
		want   Candidate
	}{
		{"one", []float32{3}, 7, Candidate{3, 7}},
		{"tie keeps lowest", []float32{1, 5, 2, 5, 5}, 100, Candidate{5, 101}},
		{"leading NaN", []float32{nan, -1, nan, -2}, 0, Candidate{-1, 1}},
		{"all NaN", []float32{nan, nan}, 10, Candidate{nan, 10}},
		{"-inf", []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, 0, Candidate{float32(math.Inf(-1)), 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Argmax(tc.logits, tc.v0)
			require.NoError(t, err)
			require.Equal(t, tc.want.ID, got.ID)
			require.Equal(t, math.Float32bits(tc.want.Logit), math.Float32bits(got.Logit))
			require.Equal(t, refTopK(tc.logits, tc.v0, 1)[0].ID, got.ID)
		})
	}
	_, err := Argmax(nil, 0)
	require.ErrorContains(t, err, "empty logits")
	_, err = Argmax([]float32{1, 2}, math.MaxInt32)
	require.ErrorContains(t, err, "shard ids [2147483647, 2147483649) not within int32")
	_, err = Argmax([]float32{1}, -1)
	require.ErrorContains(t, err, "shard ids [-1, 0)")
}

func TestTopKMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	for _, tc := range []struct {
		n, k  int
		ties  bool
		nans  bool
		trend int // 0 random, 1 increasing (worst case for the heap), -1 decreasing
	}{
		{0, 3, false, false, 0}, {5, 0, false, false, 0}, {5, 10, false, false, 0},
		{1000, 1, false, false, 0}, {1000, 40, true, false, 0}, {1000, 40, true, true, 0},
		{5000, 50, false, false, 1}, {5000, 50, false, false, -1}, {32064, 20, true, false, 0},
	} {
		t.Run(fmt.Sprintf("n%d_k%d_ties%v_nan%v_trend%d", tc.n, tc.k, tc.ties, tc.nans, tc.trend), func(t *testing.T) {
			logits := randF32(r, tc.n, 10)
			for i := range logits {
				switch {
				case tc.trend != 0:
					logits[i] = float32(tc.trend * i)
				case tc.ties:
					logits[i] = float32(math.Round(float64(logits[i])))
				}
				if tc.nans && r.IntN(10) == 0 {
					logits[i] = nan
				}
			}
			const v0 = 1000
			want := refTopK(logits, v0, tc.k)
			dst := make([]Candidate, tc.k)
			n, err := TopK(dst, logits, v0)
			require.NoError(t, err)
			require.Equal(t, len(want), n)
			for i := range want {
				require.Equal(t, want[i].ID, dst[i].ID, "rank %d", i)
			}
			if n > 0 {
				a, err := Argmax(logits, v0)
				require.NoError(t, err)
				require.Equal(t, dst[0].ID, a.ID)
			}
		})
	}
}

// TestMergeTopKIsGlobalTopK shards the logits, takes each shard's top-k and merges: the
// result is the top-k of the whole vocabulary.
func TestMergeTopKIsGlobalTopK(t *testing.T) {
	r := rand.New(rand.NewPCG(93, 94))
	const vocab, k = 10007, 25
	logits := randF32(r, vocab, 3)
	for i := range logits {
		logits[i] = float32(math.Round(float64(logits[i]) * 4)) // many ties across shards
	}
	want := refTopK(logits, 0, k)
	for _, shards := range []int{1, 2, 3, 8} {
		var gathered []Candidate
		for s := range shards {
			v0, v1 := s*vocab/shards, (s+1)*vocab/shards
			dst := make([]Candidate, k)
			n, err := TopK(dst, logits[v0:v1], v0)
			require.NoError(t, err)
			gathered = append(gathered, dst[:n]...)
		}
		// The gather order must not matter.
		for _, order := range [][]Candidate{gathered, reversed(gathered)} {
			before := slices.Clone(order)
			got := make([]Candidate, k)
			require.Equal(t, k, MergeTopK(got, order))
			require.Equal(t, before, order, "input modified")
			for i := range want {
				require.Equal(t, want[i].ID, got[i].ID, "%d shards, rank %d", shards, i)
			}
		}
	}
	require.Zero(t, MergeTopK(nil, want))
}

func reversed(c []Candidate) []Candidate {
	r := slices.Clone(c)
	slices.Reverse(r)
	return r
}

func TestTopKDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(95, 96))
	logits := randF32(r, 16000, 5)
	dst := make([]Candidate, 50)
	require.Zero(t, testing.AllocsPerRun(10, func() {
		_, _ = TopK(dst, logits, 0)
		_, _ = Argmax(logits, 0)
		_ = MergeTopK(dst[:10], dst[10:])
	}))
}

func FuzzTopK(f *testing.F) {
	f.Add(uint16(100), uint8(5), uint8(3), uint64(1))
	f.Fuzz(func(t *testing.T, n uint16, k, levels uint8, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 97))
		logits := make([]float32, int(n%3000))
		for i := range logits {
			logits[i] = float32(r.IntN(int(levels%8) + 1)) // few distinct values: many ties
			if r.IntN(50) == 0 {
				logits[i] = nan
			}
		}
		want := refTopK(logits, 3, int(k))
		dst := make([]Candidate, int(k))
		got, err := TopK(dst, logits, 3)
		require.NoError(t, err)
		require.Equal(t, len(want), got)
		for i := range want {
			require.Equal(t, want[i].ID, dst[i].ID, "rank %d", i)
		}
	})
}

// TestLogSumExpShards: combining the shards' terms gives the log-sum-exp of the whole row,
// however it is split (empty shards too).
func TestLogSumExpShards(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	row := make([]float32, 1000)
	for i := range row {
		row[i] = float32(rng.NormFloat64() * 8)
	}
	ref := 0.0
	for _, l := range row {
		ref += math.Exp(float64(l))
	}
	for _, cuts := range [][]int{{0, 1000}, {0, 0, 500, 1000}, {0, 1, 999, 1000, 1000}} {
		var terms []float32
		for i := 0; i+1 < len(cuts); i++ {
			m, sum := ShardLogSumExp(row[cuts[i]:cuts[i+1]])
			terms = append(terms, m, float32(sum))
		}
		require.InDelta(t, math.Log(ref), CombineLogSumExp(terms), 1e-6, "cuts %v", cuts)
	}
	m, sum := ShardLogSumExp([]float32{float32(math.NaN()), 1, 1})
	require.Equal(t, float32(1), m)
	require.InDelta(t, 2, sum, 0)
	require.True(t, math.IsInf(CombineLogSumExp([]float32{float32(math.Inf(-1)), 0}), -1), "no tokens: −Inf")
}
