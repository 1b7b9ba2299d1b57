package layers

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// Matrix is a row-major [Rows, Cols] matrix of weights on a device: a linear layer's W as
// [out, in], or an embedding table's rows as [vocab rows, hidden]. Element (r, c) is at
// index r·Cols + c of F32 (DType F32) or of Bits (DType BF16 or F16, the 16-bit words of
// the dtype, as device.Buffer.Uint16s views them); the other slice is unused.
type Matrix struct {
	DType      dtype.DType
	Rows, Cols int
	F32        []float32
	Bits       []uint16
}

// F32Matrix wraps row-major f32 data as a [rows, cols] Matrix.
func F32Matrix(rows, cols int, data []float32) Matrix {
	return Matrix{DType: dtype.F32, Rows: rows, Cols: cols, F32: data}
}

// Matrix16 wraps row-major 16-bit data of dtype t (BF16 or F16) as a [rows, cols] Matrix.
func Matrix16(t dtype.DType, rows, cols int, data []uint16) Matrix {
	return Matrix{DType: t, Rows: rows, Cols: cols, Bits: data}
}

// Validate reports whether the matrix is well formed: a known dtype, positive sizes and a
// data slice of exactly Rows·Cols elements for its dtype.
func (m Matrix) Validate() error {
	if m.Rows <= 0 || m.Cols <= 0 {
		return fmt.Errorf("matrix [%d, %d]: sizes must be positive", m.Rows, m.Cols)
	}
	n := m.Rows * m.Cols
	if n/m.Cols != m.Rows {
		return fmt.Errorf("matrix [%d, %d]: size overflows", m.Rows, m.Cols)
	}
	switch m.DType {
	case dtype.F32:
		if len(m.F32) != n {
			return fmt.Errorf("f32 matrix [%d, %d] needs %d elements, has %d", m.Rows, m.Cols, n, len(m.F32))
		}
	case dtype.BF16, dtype.F16:
		if len(m.Bits) != n {
			return fmt.Errorf("%v matrix [%d, %d] needs %d elements, has %d", m.DType, m.Rows, m.Cols, n, len(m.Bits))
		}
	default:
		return fmt.Errorf("matrix [%d, %d]: unsupported dtype %v", m.Rows, m.Cols, m.DType)
	}
	return nil
}

// Bytes is the size of the matrix's data in bytes.
func (m Matrix) Bytes() int { return m.Rows * m.Cols * m.DType.Size() }
