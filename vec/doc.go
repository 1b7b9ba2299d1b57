// Package vec holds the hot loops that every layer above shares: n-way sums in a fixed
// order (the reduction inside every all-reduce), element-wise adds, and bf16/f16 ⇄ f32
// conversion of whole slices. Each function states the plain loop it computes; fast
// versions must give bitwise-identical results to that loop. Data enters and leaves as
// host slices (device buffer views); nothing here allocates.
package vec
