package models_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
)

// requireShardReadsMatch checks that row ranges, column ranges and sub-blocks of a tensor,
// read in every dtype, equal the matching slices of the full f32 read, converted.
func requireShardReadsMatch(t *testing.T, src format.Source, info format.TensorInfo, full []float32, rows, cols int) {
	t.Helper()
	regions := []format.Region{
		info.All(),
		info.RowRange(0, 1),
		info.RowRange(rows/2, rows),
		info.RowRange(rows/4, rows/4+(rows+3)/4),
		info.ColRange(0, cols/2),
		info.ColRange(cols/2, cols),
		info.ColRange(cols/3, cols/3+1),
		{Row0: rows / 3, Row1: rows - rows/3, Col0: cols / 5, Col1: cols - cols/7},
		{Row0: rows - 1, Row1: rows, Col0: cols - 1, Col1: cols},
		info.RowRange(rows, rows), // empty
	}
	for _, r := range regions {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
			t.Run(fmt.Sprintf("%s/%v/%v", info.Name, r, dt), func(t *testing.T) {
				want := make([]float32, 0, r.Len())
				for i := r.Row0; i < r.Row1; i++ {
					want = append(want, full[i*cols+r.Col0:i*cols+r.Col1]...)
				}
				got := readAs(t, src, info.Name, r, dt)
				require.Len(t, got, len(want))
				for i := range want {
					w := want[i]
					if dt != dtype.F32 {
						w = dtype.ToF32(dt, dtype.FromF32(dt, w))
					}
					if got[i] != w {
						require.Failf(t, "shard read", "%s %v %v element %d: got %v, want %v", info.Name, r, dt, i, got[i], w)
					}
				}
			})
		}
	}
}

// readAs reads region r of a tensor into a destination of dtype dt and widens it to f32.
func readAs(t *testing.T, src format.Source, name string, r format.Region, dt dtype.DType) []float32 {
	t.Helper()
	out := make([]float32, r.Len())
	if dt == dtype.F32 {
		require.NoError(t, src.Read(name, r, format.F32Dest(out)))
		return out
	}
	bits := make([]uint16, r.Len())
	require.NoError(t, src.Read(name, r, format.U16Dest(dt, bits)))
	for i, h := range bits {
		out[i] = dtype.ToF32(dt, h)
	}
	return out
}
