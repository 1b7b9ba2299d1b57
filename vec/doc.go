// Package vec holds the hot loops that every layer above shares: n-way sums in a fixed
// order (the reduction inside every all-reduce), element-wise adds, bf16/f16 ⇄ f32
// conversion of whole slices, and the fp8 wire's block codec (e4m3 codes with one f32
// scale per 32 values, and their rank-order sum; plain Go, tested against its loops). Each function states the plain loop it computes; fast
// versions must give bitwise-identical results to that loop. Data enters and leaves as
// host slices (device buffer views); nothing here allocates.
//
// On amd64 CPUs with AVX2 and F16C (detected once, with CPUID and XGETBV, at package
// initialisation) the loops run as assembly kernels; elsewhere, or when built with
// -tags noasm, they run as portable Go. Both are tested bit for bit against the plain
// loops. The one thing the plain loops leave open is which NaN payload survives when two
// NaNs meet in an add (the Go compiler may commute the operands of a float add): the
// result is NaN either way, and the assembly keeps the accumulator's payload.
package vec
