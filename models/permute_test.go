package models_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/models"
)

func TestPermuteQKSmall(t *testing.T) {
	// Two heads of dim 4, one column: half-split rows are (a0 a1 b0 b1) per head, where
	// RoPE pairs (a_i, b_i); the adjacent layout interleaves them as (a0 b0 a1 b1).
	split := []string{"h0a0", "h0a1", "h0b0", "h0b1", "h1a0", "h1a1", "h1b0", "h1b1"}
	adj := []string{"h0a0", "h0b0", "h0a1", "h0b1", "h1a0", "h1b0", "h1a1", "h1b1"}
	got, err := models.PermuteQKToAdjacent(split, 2, 4, 1)
	require.NoError(t, err)
	require.Equal(t, adj, got)
	back, err := models.PermuteQKToHalfSplit(adj, 2, 4, 1)
	require.NoError(t, err)
	require.Equal(t, split, back)

	// Whole rows move: two columns.
	w := []int{0, 1, 10, 11, 20, 21, 30, 31}
	got2, err := models.PermuteQKToAdjacent(w, 1, 4, 2)
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 20, 21, 10, 11, 30, 31}, got2)
	require.Equal(t, []int{0, 1, 10, 11, 20, 21, 30, 31}, w, "input unchanged")
}

func TestPermuteQKRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ heads, headDim, cols int }{
		{1, 2, 1}, {8, 8, 64}, {4, 32, 3}, {32, 128, 1}, {2, 6, 5},
	} {
		w := make([]float32, tc.heads*tc.headDim*tc.cols)
		for i := range w {
			w[i] = rng.Float32()
		}
		a, err := models.PermuteQKToAdjacent(w, tc.heads, tc.headDim, tc.cols)
		require.NoError(t, err)
		s, err := models.PermuteQKToHalfSplit(a, tc.heads, tc.headDim, tc.cols)
		require.NoError(t, err)
		require.Equal(t, w, s)
		s2, err := models.PermuteQKToHalfSplit(w, tc.heads, tc.headDim, tc.cols)
		require.NoError(t, err)
		a2, err := models.PermuteQKToAdjacent(s2, tc.heads, tc.headDim, tc.cols)
		require.NoError(t, err)
		require.Equal(t, w, a2)
	}
}

func TestPermuteQKErrors(t *testing.T) {
	for _, tc := range []struct {
		name               string
		n, heads, hd, cols int
		want               string
	}{
		{"odd head dim", 6, 1, 3, 2, "head dim"},
		{"zero heads", 0, 0, 4, 1, "heads"},
		{"size mismatch", 7, 1, 4, 2, "7 elements"},
		{"negative cols", 0, 1, 4, -1, "cols"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := models.PermuteQKToAdjacent(make([]float32, tc.n), tc.heads, tc.hd, tc.cols)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			_, err = models.PermuteQKToHalfSplit(make([]float32, tc.n), tc.heads, tc.hd, tc.cols)
			require.Error(t, err)
		})
	}
}

// ropeHalfSplit is Hugging Face's rotate_half RoPE on one head: pairs (x[i], x[i+d/2]).
func ropeHalfSplit(x []float64, pos int, theta float64) []float64 {
	d := len(x)
	y := make([]float64, d)
	for i := range d / 2 {
		a := float64(pos) * math.Pow(theta, -float64(2*i)/float64(d))
		c, s := math.Cos(a), math.Sin(a)
		y[i] = x[i]*c - x[i+d/2]*s
		y[i+d/2] = x[i+d/2]*c + x[i]*s
	}
	return y
}

// ropeAdjacent is llama.cpp's RoPE on one head: pairs (x[2i], x[2i+1]).
func ropeAdjacent(x []float64, pos int, theta float64) []float64 {
	d := len(x)
	y := make([]float64, d)
	for i := range d / 2 {
		a := float64(pos) * math.Pow(theta, -float64(2*i)/float64(d))
		c, s := math.Cos(a), math.Sin(a)
		y[2*i] = x[2*i]*c - x[2*i+1]*s
		y[2*i+1] = x[2*i+1]*c + x[2*i]*s
	}
	return y
}

// TestPermuteQKMatchesRoPE checks the point of the permutation: projecting with the
// permuted rows and rotating adjacent pairs gives the permuted result of projecting with
// the original rows and rotating halves, so attention scores are the same in both layouts.
func TestPermuteQKMatchesRoPE(t *testing.T) {
	const heads, hd, cols, pos = 3, 8, 5, 7
	rng := rand.New(rand.NewPCG(3, 4))
	w := make([]float64, heads*hd*cols)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	x := make([]float64, cols)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	wAdj, err := models.PermuteQKToAdjacent(w, heads, hd, cols)
	require.NoError(t, err)
	project := func(w []float64) []float64 {
		out := make([]float64, heads*hd)
		for r := range out {
			for c := range cols {
				out[r] += w[r*cols+c] * x[c]
			}
		}
		return out
	}
	qSplit, qAdj := project(w), project(wAdj)
	var rotSplit, rotAdj []float64
	for h := range heads {
		rotSplit = append(rotSplit, ropeHalfSplit(qSplit[h*hd:(h+1)*hd], pos, 10000)...)
		rotAdj = append(rotAdj, ropeAdjacent(qAdj[h*hd:(h+1)*hd], pos, 10000)...)
	}
	want, err := models.PermuteQKToAdjacent(rotSplit, heads, hd, 1)
	require.NoError(t, err)
	require.InDeltaSlice(t, want, rotAdj, 1e-12)
}
