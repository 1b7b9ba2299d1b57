package models

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/quant"
)

// TestSplitRowsKeepsGEMMTilesWhole: for several tokens, linears splits a float matrix's
// outputs at multiples of the GEMM's tile, so that only the matrix's own last tile is
// partial (medium's 2048, 4096 and 5632 rows in 8 blocks); a single token splits by the
// row, and the quantized types keep their groups.
func TestSplitRowsKeepsGEMMTilesWhole(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} {
		require.Equal(t, 1, splitRows(dt, 1), "%v, one token", dt)
		for _, rows := range []int{2048, 4096, 5632} {
			align := splitRows(dt, 128)
			units := (rows + align - 1) / align
			const grid = 8
			for b := range grid {
				o0, o1 := units*b/grid*align, min(units*(b+1)/grid*align, rows)
				require.Zero(t, o0%layers.GEMMTileRows, fmt.Sprintf("%v %d rows block %d starts at %d", dt, rows, b, o0))
				if o1 < rows {
					require.Zero(t, o1%layers.GEMMTileRows, fmt.Sprintf("%v %d rows block %d ends at %d", dt, rows, b, o1))
				}
			}
		}
	}
	for _, dt := range []dtype.DType{dtype.Q8_0, dtype.Q4_K} {
		require.Equal(t, quant.SplitRows(dt), splitRows(dt, 128), dt.String())
	}
}
