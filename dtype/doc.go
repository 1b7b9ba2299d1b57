// Package dtype names the element types of device memory (f32, bf16, f16) and converts
// single elements between them exactly: widening to f32 is exact, narrowing rounds to
// nearest even. It is a leaf: every other package may import it.
package dtype
