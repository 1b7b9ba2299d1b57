package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/quant"
)

var quantTypes = []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K, dtype.Q5_0, dtype.Q5_1}

// quantMatrix quantizes rows×cols normal values to t in the device layout, and returns the
// matrix with the values its GGML rows dequantize to.
func quantMatrix(t *testing.T, r *rand.Rand, typ dtype.DType, rows, cols int) (Matrix, []float32) {
	t.Helper()
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	ggml := make([]byte, rows*typ.Bytes(cols))
	require.NoError(t, quant.Quantize(typ, ggml, v))
	require.NoError(t, quant.Dequantize(typ, v, ggml))
	w := Matrix{DType: typ, Rows: rows, Cols: cols, Data: make([]byte, quant.PackedBytes(typ, rows, cols))}
	require.NoError(t, quant.Pack(typ, w.Data, ggml, rows, cols))
	return w, v
}

// TestLinearQuantRowsSplits: the outputs of any split of the rows into ranges the layout
// allows are bitwise those of one call over all rows, and each call writes only its range.
func TestLinearQuantRowsSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, typ := range quantTypes {
		t.Run(typ.String(), func(t *testing.T) {
			rows, cols, m := 3*quant.GroupRows+5, 512, 3
			w, _ := quantMatrix(t, r, typ, rows, cols)
			x := make([]float32, m*cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			xq := make([]byte, QuantizedInputBytes(w, m))
			require.NoError(t, quant.QuantizeActs(quant.ActsFor(typ), xq, x, cols))
			want := make([]float32, m*rows)
			require.NoError(t, LinearQuantRows(want, xq, w, 0, rows))
			got := make([]float32, m*rows)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			g := quant.RowAlign(typ)
			for o0 := 0; o0 < rows; {
				o1 := min(o0+g*(1+o0%3), rows)
				require.NoError(t, LinearQuantRows(got, xq, w, o0, o1))
				o0 = o1
			}
			for i := range want {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "output %d", i)
			}
		})
	}
}

func TestLinearQuantRowsErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	w, _ := quantMatrix(t, r, dtype.Q4_0, 20, 64)
	xq := make([]byte, QuantizedInputBytes(w, 1))
	y := make([]float32, 20)
	require.ErrorContains(t, LinearQuantRows(y, xq, w, 8, 20), "output rows [8, 20) of q4_0 weights: the layout groups 16 rows")
	require.ErrorContains(t, LinearQuantRows(y, xq, w, 0, 8), "output rows [0, 8) of q4_0 weights")
	require.NoError(t, LinearQuantRows(y, xq, w, 16, 20))
	require.ErrorContains(t, LinearQuantRows(y, xq[:10], w, 0, 20), "1 rows of i16x32 activations of width 64 need 144 bytes, have 10")
	require.ErrorContains(t, LinearQuantRows(y[:7], xq, w, 0, 20), "len(y)=7 is not a multiple of out=20")
	short := w
	short.Data = w.Data[:20*w.RowBytes()] // the rows without the last group's padding
	require.ErrorContains(t, LinearQuantRows(y, xq, short, 0, 20), "q4_0 matrix [20, 64] needs 1152 bytes, has 720")
	f32 := F32Matrix(20, 64, make([]float32, 20*64))
	require.ErrorContains(t, LinearQuantRows(y, xq, f32, 0, 20), "f32 weights take f32 activations")
}

// TestEmbeddingQuantizedRows: a quantized table's rows, grouped or not, dequantize to the
// values of their GGML rows.
func TestEmbeddingQuantizedRows(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, typ := range quantTypes {
		t.Run(fmt.Sprint(typ), func(t *testing.T) {
			rows, cols := quant.GroupRows+3, 256
			table, want := quantMatrix(t, r, typ, rows, cols)
			ids := []int32{0, 17, 5, 18, 16}
			out := make([]float32, len(ids)*cols)
			require.NoError(t, Embedding(out, ids, table, 0, rows))
			for i, id := range ids {
				require.Equal(t, want[int(id)*cols:int(id+1)*cols], out[i*cols:(i+1)*cols], "token %d (id %d)", i, id)
			}
		})
	}
}
