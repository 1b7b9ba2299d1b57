package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRopeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, layout := range []RopeLayout{RopeAdjacent, RopeHalfSplit} {
		for _, tc := range []struct {
			d, heads, kvHeads int
			theta             float64
			pos               []int32
		}{
			{2, 1, 1, 10000, []int32{0}},
			{8, 2, 1, 10000, []int32{0, 1, 2, 3}},
			{64, 4, 2, 10000, []int32{7, 0, 1999}},
			{128, 8, 2, 500000, []int32{4095, 17, 3000}},
			{6, 3, 3, 100, []int32{5}},
		} {
			t.Run(fmt.Sprintf("%v/d%d/h%d", layout, tc.d, tc.heads), func(t *testing.T) {
				table, err := NewRopeTable(tc.d, 4096, tc.theta)
				require.NoError(t, err)
				n := len(tc.pos)
				q, k := randF32(r, n*tc.heads*tc.d, 2), randF32(r, n*tc.kvHeads*tc.d, 2)
				wq, wk := slices.Clone(q), slices.Clone(k)
				for i, p := range tc.pos {
					refRope(layout, wq[i*tc.heads*tc.d:(i+1)*tc.heads*tc.d], tc.d, int(p), tc.theta)
					refRope(layout, wk[i*tc.kvHeads*tc.d:(i+1)*tc.kvHeads*tc.d], tc.d, int(p), tc.theta)
				}
				require.NoError(t, table.Apply(layout, q, tc.heads, k, tc.kvHeads, tc.pos))
				requireBits(t, wq, q, "q")
				requireBits(t, wk, k, "k")
			})
		}
	}
}

// TestRopeLayoutsArePermutations checks the relation between the layouts: adjacent RoPE on
// a vector whose pairs are (v[j], v[j+d/2]) is half-split RoPE on v.
func TestRopeLayoutsArePermutations(t *testing.T) {
	const d = 16
	table, err := NewRopeTable(d, 100, 10000)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(33, 34))
	v := randF32(r, d, 1)
	inter := make([]float32, d)
	for j := range d / 2 {
		inter[2*j], inter[2*j+1] = v[j], v[j+d/2]
	}
	pos := []int32{42}
	require.NoError(t, table.Apply(RopeHalfSplit, v, 1, nil, 0, pos))
	require.NoError(t, table.Apply(RopeAdjacent, inter, 1, nil, 0, pos))
	for j := range d / 2 {
		require.Equal(t, v[j], inter[2*j])
		require.Equal(t, v[j+d/2], inter[2*j+1])
	}
}

func TestRopeKnownValues(t *testing.T) {
	table, err := NewRopeTable(4, 10, 10000)
	require.NoError(t, err)
	// Position 0 is the identity.
	v := []float32{1, 2, 3, 4}
	require.NoError(t, table.Apply(RopeAdjacent, v, 1, nil, 0, []int32{0}))
	require.Equal(t, []float32{1, 2, 3, 4}, v)
	// (1, 0) at position p, pair 0 (frequency 1) turns by p radians; pair 1 by p/100.
	v = []float32{1, 0, 1, 0}
	require.NoError(t, table.Apply(RopeAdjacent, v, 1, nil, 0, []int32{3}))
	require.Equal(t, []float32{float32(math.Cos(3)), float32(math.Sin(3)), float32(math.Cos(0.03)), float32(math.Sin(0.03))}, v)
	c, s := table.CosSin(3)
	require.Equal(t, []float32{float32(math.Cos(3)), float32(math.Cos(0.03))}, c)
	require.Equal(t, []float32{float32(math.Sin(3)), float32(math.Sin(0.03))}, s)
	require.Equal(t, 4, table.HeadDim())
	require.Equal(t, 10, table.MaxPos())
}

func TestRopeTableFreqs(t *testing.T) {
	table, err := NewRopeTableFreqs(8, []float64{1, 0.5})
	require.NoError(t, err)
	c, s := table.CosSin(6)
	require.Equal(t, []float32{float32(math.Cos(6)), float32(math.Cos(3))}, c)
	require.Equal(t, []float32{float32(math.Sin(6)), float32(math.Sin(3))}, s)
}

func TestRopeErrors(t *testing.T) {
	_, err := NewRopeTable(7, 10, 10000)
	require.ErrorContains(t, err, "head dimension 7 must be even and positive")
	_, err = NewRopeTable(8, 0, 10000)
	require.ErrorContains(t, err, "maxPos=0")
	_, err = NewRopeTable(8, 10, 0)
	require.ErrorContains(t, err, "theta=0")
	_, err = NewRopeTableFreqs(10, nil)
	require.ErrorContains(t, err, "no frequencies")
	_, err = NewRopeTableFreqs(10, []float64{1, math.NaN()})
	require.ErrorContains(t, err, "inverse frequency 1 is NaN")

	table, err := NewRopeTable(4, 10, 10000)
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		layout   RopeLayout
		q, heads int
		k, kv    int
		pos      []int32
		want     string
	}{
		{"layout", 0, 4, 1, 4, 1, []int32{0}, "unknown layout"},
		{"q short", RopeAdjacent, 7, 2, 4, 1, []int32{0}, "len(q)=7, want tokens·heads·headDim = 1·2·4 = 8"},
		{"k short", RopeAdjacent, 8, 2, 3, 1, []int32{0}, "len(k)=3, want tokens·kvHeads·headDim = 1·1·4 = 4"},
		{"position", RopeHalfSplit, 8, 1, 8, 1, []int32{0, 10}, "token 1 at position 10, outside the table's [0, 10)"},
		{"negative position", RopeHalfSplit, 4, 1, 4, 1, []int32{-1}, "token 0 at position -1"},
		{"negative heads", RopeHalfSplit, 4, -1, 4, 1, []int32{0}, "negative head count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := table.Apply(tc.layout, make([]float32, tc.q), tc.heads, make([]float32, tc.k), tc.kv, tc.pos)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestRopeDoesNotAllocate(t *testing.T) {
	table, err := NewRopeTable(128, 256, 10000)
	require.NoError(t, err)
	q, k := make([]float32, 4*32*128), make([]float32, 4*8*128)
	pos := []int32{1, 2, 3, 200}
	require.Zero(t, testing.AllocsPerRun(10, func() {
		_ = table.Apply(RopeHalfSplit, q, 32, k, 8, pos)
		_ = table.Apply(RopeAdjacent, q, 32, k, 8, pos)
	}))
}

func FuzzRope(f *testing.F) {
	f.Add(uint8(4), uint8(2), uint8(1), uint8(3), false, uint64(1))
	f.Add(uint8(64), uint8(4), uint8(4), uint8(1), true, uint64(2))
	f.Fuzz(func(t *testing.T, halfD, heads, kv, tokens uint8, half bool, seed uint64) {
		d, H, KV, N := 2*(int(halfD%64)+1), int(heads%5), int(kv%3), int(tokens%5)
		layout := RopeAdjacent
		if half {
			layout = RopeHalfSplit
		}
		r := rand.New(rand.NewPCG(seed, 35))
		table, err := NewRopeTable(d, 600, 10000)
		require.NoError(t, err)
		pos := make([]int32, N)
		for i := range pos {
			pos[i] = int32(r.IntN(600))
		}
		q, k := randF32(r, N*H*d, 3), randF32(r, N*KV*d, 3)
		wq, wk := slices.Clone(q), slices.Clone(k)
		for i, p := range pos {
			refRope(layout, wq[i*H*d:(i+1)*H*d], d, int(p), 10000)
			refRope(layout, wk[i*KV*d:(i+1)*KV*d], d, int(p), 10000)
		}
		require.NoError(t, table.Apply(layout, q, H, k, KV, pos))
		requireBits(t, wq, q)
		requireBits(t, wk, k)
	})
}
