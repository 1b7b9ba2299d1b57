package layers

import (
	"fmt"
	"unsafe"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/quant"
)

// Matrix is a row-major [Rows, Cols] matrix of weights on a device: a linear layer's W as
// [out, in], or an embedding table's rows as [vocab rows, hidden]. It is raw bytes and a
// type: row r is Data[r·RowBytes() : (r+1)·RowBytes()], Cols values of DType (f32, the
// 16-bit words of bf16 or f16, or whole blocks of a quantized type), except where the
// layout package quant keeps on devices interleaves groups of rows (quant.Pack; its
// quant.DequantizeRow reads any row of any quantized type).
type Matrix struct {
	DType      dtype.DType
	Rows, Cols int
	Data       []byte
}

// F32Matrix wraps row-major f32 data as a [rows, cols] Matrix (no copy).
func F32Matrix(rows, cols int, data []float32) Matrix {
	return Matrix{DType: dtype.F32, Rows: rows, Cols: cols, Data: bytesOf(data)}
}

// Matrix16 wraps row-major 16-bit data of dtype t (BF16 or F16) as a [rows, cols] Matrix
// (no copy).
func Matrix16(t dtype.DType, rows, cols int, data []uint16) Matrix {
	return Matrix{DType: t, Rows: rows, Cols: cols, Data: bytesOf(data)}
}

// RowBytes is the size of one row in bytes.
func (m Matrix) RowBytes() int { return m.DType.Bytes(m.Cols) }

// Bytes is the size of the matrix's data in bytes: Rows·RowBytes, the rows rounded up to a
// whole group where the type's layout groups them.
func (m Matrix) Bytes() int { return quant.PackedBytes(m.DType, m.Rows, m.Cols) }

// F32s views the data of an f32 matrix as its elements.
func (m Matrix) F32s() []float32 { return viewAs[float32](m.Data) }

// Bits views the data of a bf16 or f16 matrix as its 16-bit words.
func (m Matrix) Bits() []uint16 { return viewAs[uint16](m.Data) }

// Validate reports whether the matrix is well formed: a known dtype, positive sizes, rows
// of whole blocks and exactly Bytes bytes of data.
func (m Matrix) Validate() error {
	if m.Rows <= 0 || m.Cols <= 0 {
		return fmt.Errorf("matrix [%d, %d]: sizes must be positive", m.Rows, m.Cols)
	}
	if err := m.DType.CheckRow(m.Cols); err != nil {
		return fmt.Errorf("matrix [%d, %d]: %w", m.Rows, m.Cols, err)
	}
	if n := m.RowBytes(); m.Rows > maxBytes/n {
		return fmt.Errorf("%v matrix [%d, %d]: size overflows", m.DType, m.Rows, m.Cols)
	}
	if len(m.Data) != m.Bytes() {
		return fmt.Errorf("%v matrix [%d, %d] needs %d bytes, has %d", m.DType, m.Rows, m.Cols, m.Bytes(), len(m.Data))
	}
	return nil
}

// maxBytes bounds a matrix's size so that byte offsets never overflow an int.
const maxBytes = 1 << 48

func bytesOf[T float32 | uint16](s []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

func viewAs[T float32 | uint16](b []byte) []T {
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(zero)))
}
