package format_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
)

var allDTypes = []dtype.DType{dtype.F32, dtype.F16, dtype.BF16}

// readEverything reads every tensor of src whole and in a corner region, in every dtype;
// on a source that opened, every read must succeed.
func readEverything(t *testing.T, src format.Source) {
	for _, info := range src.Tensors() {
		rows, cols := info.Dims()
		for _, dt := range allDTypes {
			for _, r := range []format.Region{info.All(), {Row0: rows / 2, Row1: rows, Col0: cols / 2, Col1: cols}} {
				var dst format.Dest
				if dt == dtype.F32 {
					dst = format.F32Dest(make([]float32, r.Len()))
				} else {
					dst = format.U16Dest(dt, make([]uint16, r.Len()))
				}
				require.NoError(t, src.Read(info.Name, r, dst))
			}
		}
	}
}

// fixtureTensors are a few tensors of every stored dtype, with distinct values.
func fixtureTensors(rows int) []format.Tensor {
	var ts []format.Tensor
	for i, dt := range allDTypes {
		data := make([]float32, rows*8)
		for j := range data {
			data[j] = float32(j%97)/8 - float32(i)
		}
		ts = append(ts, format.Tensor{Info: format.TensorInfo{Name: "w." + dt.String(), Shape: []int{rows, 8}, DType: dt}, Data: data})
	}
	return append(ts, format.Tensor{Info: format.TensorInfo{Name: "norm", Shape: []int{8}, DType: dtype.F32}, Data: []float32{1, 2, 3, 4, 5, 6, 7, 8}})
}
