package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// blockTypes are the weight types of this package.
var blockTypes = []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K, dtype.Q5_0, dtype.Q5_1}

// allActs are the activation formats.
var allActs = []Acts{Acts16x32, Acts16x256}

// randValues draws n values: normal with standard deviation std, a few outliers and exact
// zeros, as trained weights and activations look.
func randValues(r *rand.Rand, n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch x := r.IntN(100); {
		case x == 0:
			v[i] = 0
		case x == 1:
			v[i] = float32(20 * std * r.NormFloat64())
		default:
			v[i] = float32(std * r.NormFloat64())
		}
	}
	return v
}

// randRows quantizes rows×cols random values to t and returns their device rows.
func randRows(t *testing.T, r *rand.Rand, typ dtype.DType, rows, cols int) []byte {
	t.Helper()
	ggml := make([]byte, rows*typ.Bytes(cols))
	require.NoError(t, Quantize(typ, ggml, randValues(r, rows*cols, 0.02)))
	dev := make([]byte, PackedBytes(typ, rows, cols))
	require.NoError(t, Pack(typ, dev, ggml, rows, cols))
	return dev
}

// dequantActs returns the values a row of quantized activations stands for: d·q per block.
func dequantActs(a Acts, row []byte, cols int) []float64 {
	out := make([]float64, cols)
	bs := a.Block()
	nb := cols / bs
	for b := range nb {
		d := math.Float32frombits(binary.LittleEndian.Uint32(row[2*cols+4*b:]))
		for i := range bs {
			out[b*bs+i] = float64(d) * float64(actsValue(a, row, cols, b*bs+i))
		}
	}
	return out
}

// actsValue is value i of a quantized row of cols activations.
func actsValue(a Acts, row []byte, cols, i int) int64 {
	return viewActs(row, cols, a.Block()).planeValue(i, a.Block())
}
