package chart

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// requirePNG checks that path holds a PNG of the charts' size.
func requirePNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, 768, img.Bounds().Dx())
	require.Equal(t, 480, img.Bounds().Dy())
}

func TestLines(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		series []Series
	}{
		{"two lines", []Series{
			{Name: "batch 1", X: []float64{1, 2, 4, 8}, Y: []float64{3.1, 2.2, 1.9, 2.5}},
			{Name: "batch 8", X: []float64{1, 2, 4, 8}, Y: []float64{9, 6, 5, 5.5}},
		}},
		{"one point", []Series{{Name: "only", X: []float64{1}, Y: []float64{1}}}},
		{"unnamed, flat", []Series{{X: []float64{1, 2}, Y: []float64{0, 0}}}},
		{"many", func() []Series {
			var s []Series
			for i := range 15 { // past the palette's 12 hues
				s = append(s, Series{Name: "s", X: []float64{0, 1}, Y: []float64{float64(i), float64(i + 1)}})
			}
			return s
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".png")
			require.NoError(t, Lines(path, "latency", "TP", "ms", tc.series))
			requirePNG(t, path)
		})
	}
}

func TestStackedBars(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bars.png")
	bars := []string{"tp1 b1", "tp2 b1", "tp4 b1"}
	stacks := []Stack{
		{Name: "gemm", Values: []float64{2, 1, 0.5}},
		{Name: "allreduce.oneshot", Values: []float64{0, 0.3, 0.4}},
		{Name: "host overhead", Values: []float64{0.2, 0.2, 0.3}},
	}
	require.NoError(t, StackedBars(path, "where a token goes", "ms", bars, stacks))
	requirePNG(t, path)

	zero := filepath.Join(t.TempDir(), "zero.png") // an empty range must not break the axis
	require.NoError(t, StackedBars(zero, "", "ms", []string{"a"}, []Stack{{Values: []float64{0}}}))
	requirePNG(t, zero)
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.png")
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no series", Lines(path, "", "", "", nil), "no series"},
		{"empty series", Lines(path, "", "", "", []Series{{Name: "a"}}), `series 0 ("a") has no points`},
		{"mismatched", Lines(path, "", "", "", []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{1}}}), "2 X values but 1 Y values"},
		{"NaN Y", Lines(path, "", "", "", []Series{{X: []float64{1, 2}, Y: []float64{1, nan}}}), "Y 1 is NaN"},
		{"Inf X", Lines(path, "", "", "", []Series{{X: []float64{math.Inf(1)}, Y: []float64{1}}}), "X 0 is +Inf"},
		{"no bars", StackedBars(path, "", "", nil, []Stack{{Name: "a"}}), "no bars"},
		{"no stacks", StackedBars(path, "", "", []string{"x"}, nil), "no stacks"},
		{"short stack", StackedBars(path, "", "", []string{"x", "y"}, []Stack{{Name: "a", Values: []float64{1}}}), `stack 0 ("a") has 1 values for 2 bars`},
		{"NaN value", StackedBars(path, "", "", []string{"x"}, []Stack{{Name: "a", Values: []float64{nan}}}), "value 0 is NaN"},
		{"negative", StackedBars(path, "", "", []string{"x"}, []Stack{{Name: "a", Values: []float64{-1}}}), `bar "x") is negative`},
		{"no directory", Lines(filepath.Join(dir, "missing", "x.png"), "", "", "", []Series{{X: []float64{1}, Y: []float64{1}}}), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.err, tc.want)
		})
	}
	_, err := os.Stat(path)
	require.True(t, os.IsNotExist(err), "no chart written for bad input")
}
