package format

import (
	"fmt"
	"slices"

	"github.com/tpslice/tpslice/dtype"
)

// Tensor is a whole tensor in memory, what the writers take: its values as float32 and the
// dtype (Info.DType) to store them as; a narrower dtype rounds to nearest even, a block
// type quantizes them unless Blocks holds the blocks to store.
type Tensor struct {
	// Info names the tensor and gives its shape and storage dtype.
	Info TensorInfo
	// Data holds Info.Elements() values, row-major.
	Data []float32
	// Blocks, for a block type, holds the GGML blocks to store as they are (nil:
	// quantize Data).
	Blocks []byte
}

// storedBytes is the size of the tensor's data as stored.
func (t Tensor) storedBytes() int {
	rows, cols := t.Info.Dims()
	return rows * t.Info.DType.Bytes(cols)
}

// ReadAll reads every tensor of src into memory, for writing it elsewhere. With t = 0 each
// tensor keeps its dtype (a block type its blocks, and their dequantized values in Data);
// otherwise each is stored as t and its values are rounded to t, so writing and reading
// back is exact. t must be an element type.
func ReadAll(src Source, t dtype.DType) ([]Tensor, error) {
	if t != 0 && !t.Scalar() {
		return nil, fmt.Errorf("models: read all of %v: dtype %v is not f32, bf16 or f16", src, t)
	}
	infos := src.Tensors()
	out := make([]Tensor, 0, len(infos))
	for _, info := range infos {
		data, err := ReadTensor(src, info.Name)
		if err != nil {
			return nil, err
		}
		if t != 0 {
			info.DType = t
		}
		if info.DType.Quantized() {
			blocks := make([]byte, Tensor{Info: info}.storedBytes())
			if err := src.Read(info.Name, info.All(), BlockDest(info.DType, blocks)); err != nil {
				return nil, err
			}
			out = append(out, Tensor{Info: info, Data: data, Blocks: blocks})
			continue
		}
		if info.DType != dtype.F32 {
			for i, x := range data {
				data[i] = dtype.ToF32(info.DType, dtype.FromF32(info.DType, x))
			}
		}
		out = append(out, Tensor{Info: info, Data: data})
	}
	return out, nil
}

// checkTensors validates tensors for a writer: names unique and non-empty, a valid dtype,
// non-negative dimensions and as many values as the shape holds.
func checkTensors(format, path string, tensors []Tensor) error {
	seen := make(map[string]bool, len(tensors))
	for _, t := range tensors {
		fail := func(format2 string, args ...any) error {
			return fmt.Errorf("%s %s: write tensor %q: %s", format, path, t.Info.Name, fmt.Sprintf(format2, args...))
		}
		switch {
		case t.Info.Name == "":
			return fail("empty name")
		case seen[t.Info.Name]:
			return fail("name appears twice")
		case !t.Info.DType.Valid():
			return fail("invalid dtype %v", t.Info.DType)
		case len(t.Info.Shape) == 0 || len(t.Info.Shape) > 2:
			return fail("shape %v: want 1 or 2 dimensions", t.Info.Shape)
		case slices.ContainsFunc(t.Info.Shape, func(d int) bool { return d < 0 }):
			return fail("negative dimension in shape %v", t.Info.Shape)
		case len(t.Data) != t.Info.Elements():
			return fail("%d values for shape %v (%d elements)", len(t.Data), t.Info.Shape, t.Info.Elements())
		}
		if _, cols := t.Info.Dims(); !t.Info.DType.Whole(cols) {
			return fail("%v rows of %d values: not a whole number of %d-value blocks", t.Info.DType, cols, t.Info.DType.BlockSize())
		}
		if t.Blocks != nil && (!t.Info.DType.Quantized() || len(t.Blocks) != t.storedBytes()) {
			return fail("%d bytes of blocks for a %v tensor of shape %v (%d bytes)", len(t.Blocks), t.Info.DType, t.Info.Shape, t.storedBytes())
		}
		seen[t.Info.Name] = true
	}
	return nil
}
