package models_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/models/format"
)

func tinyPreset(t *testing.T) models.Config {
	t.Helper()
	c, err := models.Preset("tiny")
	require.NoError(t, err)
	return c
}

func TestDummyDeterministic(t *testing.T) {
	c := tinyPreset(t)
	a, err := models.NewDummy(c, 7)
	require.NoError(t, err)
	b, err := models.NewDummy(c, 7)
	require.NoError(t, err)
	other, err := models.NewDummy(c, 8)
	require.NoError(t, err)
	require.Equal(t, c, a.Config())
	require.Equal(t, uint64(7), a.Seed())
	require.NoError(t, c.CheckSource(a))
	require.Equal(t, len(c.Tensors(0)), len(a.Tensors()))

	seen := map[float32]string{}
	for _, info := range a.Tensors() {
		require.Equal(t, dtype.F32, info.DType)
		va, err := format.ReadTensor(a, info.Name)
		require.NoError(t, err)
		vb, err := format.ReadTensor(b, info.Name)
		require.NoError(t, err)
		vo, err := format.ReadTensor(other, info.Name)
		require.NoError(t, err)
		require.Equal(t, va, vb, "same seed, same values: %s", info.Name)
		require.NotEqual(t, va, vo, "another seed, other values: %s", info.Name)
		// Rows and tensors draw from distinct streams: the first element of each row
		// is not repeated anywhere.
		_, cols := info.Dims()
		for r := 0; r < len(va); r += cols {
			if prev, dup := seen[va[r]]; dup {
				require.Failf(t, "repeated stream", "%s row %d starts like %s", info.Name, r/cols, prev)
			}
			seen[va[r]] = info.Name
		}
	}
}

func TestDummyStatistics(t *testing.T) {
	c := tinyPreset(t)
	d, err := models.NewDummy(c, 1)
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		mean, std float64
	}{
		{"blk.0.ffn_gate.weight", 0, models.DummyStd},
		{models.TokenEmbd, 0, models.DummyStd},
		{models.OutputNorm, 1, models.DummyStd},
		{"blk.1.attn_norm.weight", 1, models.DummyStd},
	} {
		v, err := format.ReadTensor(d, tc.name)
		require.NoError(t, err)
		var sum, sq float64
		for _, x := range v {
			sum += float64(x)
		}
		mean := sum / float64(len(v))
		for _, x := range v {
			sq += (float64(x) - mean) * (float64(x) - mean)
		}
		std := math.Sqrt(sq / float64(len(v)))
		tol := 5 * tc.std / math.Sqrt(float64(len(v)))
		require.InDelta(t, tc.mean, mean, tol, tc.name)
		require.InDelta(t, tc.std, std, 0.25*tc.std, tc.name)
	}
}

func TestDummyShardReads(t *testing.T) {
	wide := models.Config{Name: "wide", Hidden: 40, Intermediate: 3*models.DummyBlock + 17, Layers: 1, Heads: 2, KVHeads: 1,
		HeadDim: 20, Vocab: 10, RopeTheta: 1e4, RMSEps: 1e-5, ContextLength: 8, RopeLayout: models.RopeHalfSplit}
	for _, c := range []models.Config{tinyPreset(t), wide} {
		d, err := models.NewDummy(c, 3)
		require.NoError(t, err)
		for _, name := range []string{"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.ffn_down.weight", models.TokenEmbd, models.OutputNorm} {
			info, ok := d.Tensor(name)
			require.True(t, ok)
			full, err := format.ReadTensor(d, name)
			require.NoError(t, err)
			rows, cols := info.Dims()
			requireShardReadsMatch(t, d, info, full, rows, cols)
		}
	}

	// Column ranges of a row that spans several random-stream blocks, at every TP degree.
	d, err := models.NewDummy(wide, 9)
	require.NoError(t, err)
	name := "blk.0.ffn_down.weight"
	info, _ := d.Tensor(name)
	full, err := format.ReadTensor(d, name)
	require.NoError(t, err)
	rows, cols := info.Dims()
	for tp := 1; tp <= 8; tp++ {
		for rank := range tp {
			c0, c1 := rank*cols/tp, (rank+1)*cols/tp
			got := make([]float32, rows*(c1-c0))
			require.NoError(t, d.Read(name, info.ColRange(c0, c1), format.F32Dest(got)))
			for r := range rows {
				require.Equal(t, full[r*cols+c0:r*cols+c1], got[r*(c1-c0):(r+1)*(c1-c0)], "tp %d rank %d row %d", tp, rank, r)
			}
		}
	}
}

func TestDummyErrors(t *testing.T) {
	_, err := models.NewDummy(models.Config{Name: "bad"}, 1)
	require.Error(t, err)
	require.Contains(t, err.Error(), "Hidden")

	d, err := models.NewDummy(tinyPreset(t), 1)
	require.NoError(t, err)
	requireReadErrors(t, d, "blk.0.attn_q.weight")
	require.NoError(t, d.Close())
	err = d.Read(models.OutputNorm, format.Region{Row0: 0, Row1: 1, Col0: 0, Col1: 1}, format.F32Dest(make([]float32, 1)))
	require.ErrorContains(t, err, "closed")
}

// requireReadErrors checks that bad regions, short and malformed destinations and unknown
// names are errors naming the source and the tensor.
func requireReadErrors(t *testing.T, src format.Source, name string) {
	t.Helper()
	info, ok := src.Tensor(name)
	require.True(t, ok)
	rows, cols := info.Dims()
	big := format.F32Dest(make([]float32, rows*cols+1))
	for _, tc := range []struct {
		what string
		r    format.Region
		dst  format.Dest
		want string
	}{
		{"rows past end", info.RowRange(0, rows+1), big, "out of bounds"},
		{"cols past end", info.ColRange(1, cols+1), big, "out of bounds"},
		{"negative row", format.Region{Row0: -1, Row1: 1, Col0: 0, Col1: 1}, big, "out of bounds"},
		{"reversed cols", format.Region{Row0: 0, Row1: 1, Col0: 2, Col1: 1}, big, "out of bounds"},
		{"short destination", info.All(), format.F32Dest(make([]float32, rows*cols-1)), "destination holds"},
		{"invalid dtype", info.All(), format.Dest{DType: 200}, "dtype"},
		{"mixed destination", info.All(), format.Dest{DType: dtype.F32, F32: make([]float32, rows*cols), U16: []uint16{1}}, "16-bit"},
		{"bf16 with f32", info.All(), format.Dest{DType: dtype.BF16, F32: make([]float32, rows*cols), U16: make([]uint16, rows*cols)}, "float32"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			err := src.Read(name, tc.r, tc.dst)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), name)
			require.Contains(t, err.Error(), src.String())
		})
	}
	err := src.Read("no.such.weight", info.All(), big)
	require.ErrorContains(t, err, "no.such.weight")
	_, err = format.ReadTensor(src, "no.such.weight")
	require.ErrorContains(t, err, "no.such.weight")
}
