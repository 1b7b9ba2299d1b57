package layers

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

func TestMatrix(t *testing.T) {
	m := F32Matrix(2, 3, make([]float32, 6))
	require.NoError(t, m.Validate())
	require.Equal(t, 24, m.Bytes())
	h := Matrix16(dtype.F16, 3, 2, make([]uint16, 6))
	require.NoError(t, h.Validate())
	require.Equal(t, 12, h.Bytes())
	require.ErrorContains(t, Matrix16(dtype.BF16, 3, 2, make([]uint16, 5)).Validate(), "bf16 matrix [3, 2] needs 12 bytes, has 10")
	require.ErrorContains(t, F32Matrix(-1, 2, nil).Validate(), "matrix [-1, 2]: sizes must be positive")
	require.ErrorContains(t, F32Matrix(1<<62, 4, nil).Validate(), "size overflows")
	require.ErrorContains(t, Matrix{DType: dtype.Q4_K, Rows: 2, Cols: 100}.Validate(), "q4_k row of 100 values: not a whole number of 256-value blocks")
	q := Matrix{DType: dtype.Q8_0, Rows: 2, Cols: 512, Data: make([]byte, 16*16*34)} // one group of 16 rows
	require.NoError(t, q.Validate())
	require.Equal(t, 544, q.RowBytes())
	g := Matrix{DType: dtype.Q4_K, Rows: 17, Cols: 512, Data: make([]byte, 32*2*144)} // grouped: two groups of 16 rows
	require.NoError(t, g.Validate())
	require.Equal(t, 288, g.RowBytes())
	g.Data = g.Data[:17*288]
	require.ErrorContains(t, g.Validate(), "q4_k matrix [17, 512] needs 9216 bytes, has 4896")
}
