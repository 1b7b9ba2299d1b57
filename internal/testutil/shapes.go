package testutil

// Shape is a weight matrix's output rows and input columns.
type Shape struct{ Out, In int }

// MediumDecodeStep is the matrices one decode step of the medium preset multiplies at TP 1,
// in order: 8 layers of a 4096×2048 QKV, a 2048×2048 O, an 11264×2048 gate-up and a
// 2048×5632 down, then the 16384×2048 head (Q, K and V merged, and gate and up, as the
// model launches them).
func MediumDecodeStep() []Shape {
	var shapes []Shape
	for range 8 {
		shapes = append(shapes, Shape{4096, 2048}, Shape{2048, 2048}, Shape{11264, 2048}, Shape{2048, 5632})
	}
	return append(shapes, Shape{16384, 2048})
}

// MediumDecodeStepTP8 is one rank's shards of MediumDecodeStep at TP 8: column-parallel
// shards keep all columns of an eighth of the rows, row-parallel ones (O and down) an
// eighth of the columns, and the head an eighth of the vocabulary.
func MediumDecodeStepTP8() []Shape {
	var shapes []Shape
	for range 8 {
		shapes = append(shapes, Shape{512, 2048}, Shape{2048, 256}, Shape{1408, 2048}, Shape{2048, 704})
	}
	return append(shapes, Shape{2048, 2048})
}
