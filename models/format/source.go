package format

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// TensorInfo describes one stored tensor.
type TensorInfo struct {
	// Name is the canonical name (see TokenEmbd, LayerTensorName); a loader keeps a name it
	// does not know as the file spells it.
	Name string
	// Shape is [rows, cols] = [out, in] for a matrix (row-major, a row is contiguous) and [n]
	// for a vector.
	Shape []int
	// DType is the element type the tensor is stored in.
	DType dtype.DType
}

// Dims returns the tensor as a matrix: [rows, cols] for a 2-D tensor, one row of n columns
// for a 1-D tensor [n].
func (t TensorInfo) Dims() (rows, cols int) {
	switch len(t.Shape) {
	case 1:
		return 1, t.Shape[0]
	case 2:
		return t.Shape[0], t.Shape[1]
	}
	return 0, 0
}

// Elements is the number of elements, the product of Shape.
func (t TensorInfo) Elements() int {
	if len(t.Shape) == 0 {
		return 0
	}
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// All is the region covering the whole tensor.
func (t TensorInfo) All() Region {
	r, c := t.Dims()
	return Region{Row0: 0, Row1: r, Col0: 0, Col1: c}
}

// RowRange is the region of rows [r0, r1), all columns: a column-parallel (output-sharded)
// layer's shard.
func (t TensorInfo) RowRange(r0, r1 int) Region {
	_, c := t.Dims()
	return Region{Row0: r0, Row1: r1, Col0: 0, Col1: c}
}

// ColRange is the region of columns [c0, c1) of every row: a row-parallel (input-sharded)
// layer's shard, or elements [c0, c1) of a vector.
func (t TensorInfo) ColRange(c0, c1 int) Region {
	r, _ := t.Dims()
	return Region{Row0: 0, Row1: r, Col0: c0, Col1: c1}
}

// Region selects rows [Row0, Row1) and, of each, columns [Col0, Col1) of a tensor seen as a
// matrix (see TensorInfo.Dims). A read writes it row-major: element (r, c) lands at
// (r-Row0)·(Col1-Col0) + (c-Col0).
type Region struct {
	Row0, Row1, Col0, Col1 int
}

// Len is the number of elements in the region.
func (r Region) Len() int { return (r.Row1 - r.Row0) * (r.Col1 - r.Col0) }

// String prints the region as "rows [a,b) cols [c,d)".
func (r Region) String() string {
	return fmt.Sprintf("rows [%d,%d) cols [%d,%d)", r.Row0, r.Row1, r.Col0, r.Col1)
}

// check reports whether r lies inside t and fits in a destination of n values of type
// dt; a block-type destination takes rows of whole blocks.
// CheckRead says what is wrong, if anything, with reading region r of tensor t into dst:
// a destination whose dtype and slices disagree, a region outside the tensor, larger than
// dst, or cutting a block type's blocks. Every Source's Read starts with it.
func CheckRead(t TensorInfo, r Region, dst Dest) error {
	if err := dst.check(); err != nil {
		return err
	}
	return r.check(t, dst.DType, dst.Len())
}

func (r Region) check(t TensorInfo, dt dtype.DType, n int) error {
	rows, cols := t.Dims()
	if len(t.Shape) == 0 || len(t.Shape) > 2 {
		return fmt.Errorf("shape %v: only 1-D and 2-D tensors can be read", t.Shape)
	}
	if r.Row0 < 0 || r.Row0 > r.Row1 || r.Row1 > rows || r.Col0 < 0 || r.Col0 > r.Col1 || r.Col1 > cols {
		return fmt.Errorf("region %v out of bounds of shape %v", r, t.Shape)
	}
	if r.Len() > n {
		return fmt.Errorf("region %v of shape %v has %d elements, destination holds %d", r, t.Shape, r.Len(), n)
	}
	if w := r.Col1 - r.Col0; dt.Quantized() && !dt.Whole(w) {
		return fmt.Errorf("region %v of shape %v: rows of %d values do not fill whole %d-value %v blocks", r, t.Shape, w, dt.BlockSize(), dt)
	}
	return nil
}

// Source is a set of named tensors that can be read piecewise, so that a rank copies only
// its shard. Implementations are safe for concurrent reads.
type Source interface {
	// Tensors lists every tensor, sorted by name.
	Tensors() []TensorInfo
	// Tensor returns one tensor's description.
	Tensor(name string) (TensorInfo, bool)
	// Read copies region r of tensor name into dst, converting each value from the stored
	// dtype to dst's: exactly where that is exact (widening, dequantizing, a copy of whole
	// blocks), rounding to nearest even when narrowing to bf16/f16, quantizing (package
	// quant) into a block type.
	Read(name string, r Region, dst Dest) error
	// Close releases the source (unmaps files); reads after Close fail.
	Close() error
	// String names the source in errors ("gguf /path/model.gguf").
	String() string
}

var _ Source = (*FileSource)(nil)

// ReadTensor reads a whole tensor from src as float32 (exact for f32, bf16 and f16).
func ReadTensor(src Source, name string) ([]float32, error) {
	info, ok := src.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("%v: no tensor %s", src, name)
	}
	out := make([]float32, info.Elements())
	if err := src.Read(name, info.All(), F32Dest(out)); err != nil {
		return nil, err
	}
	return out, nil
}
