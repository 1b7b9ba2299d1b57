//go:build amd64 && !noasm

package quant

import (
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// The assembly kernels (dot_group_avx512_amd64.s, dot_group_avx2_amd64.s):
// y[0:16·groups] for the groups of rows at w against one row of activations at a; n is the
// row's blocks. See the files for the contracts.

//go:noescape
func dotQ8_0GroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ4_0GroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ4_KGroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ5_KGroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ6_KGroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ5_0GroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ5_1GroupsAVX512(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ8_0GroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ4_0GroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ4_KGroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ5_KGroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ6_KGroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ5_0GroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)

//go:noescape
func dotQ5_1GroupsAVX2(y *float32, w *byte, groups int, a *byte, n int)

// groupKernel is a grouped type's kernel: y[0:16·groups] for the groups of rows at w
// against one row of activations at a; n is the row's blocks.
type groupKernel func(y *float32, w *byte, groups int, a *byte, n int)

// avx512Groups and avx2Groups are the kernels of the grouped types; never written.
var (
	avx512Groups = map[dtype.DType]groupKernel{
		dtype.Q8_0: dotQ8_0GroupsAVX512,
		dtype.Q4_0: dotQ4_0GroupsAVX512,
		dtype.Q4_K: dotQ4_KGroupsAVX512,
		dtype.Q5_K: dotQ5_KGroupsAVX512,
		dtype.Q6_K: dotQ6_KGroupsAVX512,
		dtype.Q5_0: dotQ5_0GroupsAVX512,
		dtype.Q5_1: dotQ5_1GroupsAVX512,
	}
	avx2Groups = map[dtype.DType]groupKernel{
		dtype.Q8_0: dotQ8_0GroupsAVX2,
		dtype.Q4_0: dotQ4_0GroupsAVX2,
		dtype.Q4_K: dotQ4_KGroupsAVX2,
		dtype.Q5_K: dotQ5_KGroupsAVX2,
		dtype.Q6_K: dotQ6_KGroupsAVX2,
		dtype.Q5_0: dotQ5_0GroupsAVX2,
		dtype.Q5_1: dotQ5_1GroupsAVX2,
	}
)

// dotCallBytes bounds the weight bytes one assembly call reads, so that a goroutine in
// assembly (which the runtime cannot preempt) returns within microseconds; a call takes
// lockstepGroups groups all the same (1 MiB of Q4_0 rows of 14336 values, 0.1 ms).
const dotCallBytes = 64 << 10

// dotRows is Dot: the assembly where the CPU runs it (AVX-512 with VNNI, else AVX2), else
// Go; from a few rows of activations (gemmType.from), the AVX-512 GEMM of every grouped
// type.
func dotRows(t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, rows, cols, o0, o1 int) {
	avx512 := vec.AcceleratedAVX512()
	if !vec.Accelerated() {
		dotRowsGo(t, y, ystride, xq, m, w, rows, cols, o0, o1)
		return
	}
	g := avx2Groups[t]
	if avx512 {
		g = avx512Groups[t]
		if k, ok := avx512GEMMs[t]; ok && m >= k.from {
			gemmGroupsAsm(k, g, t, y, ystride, xq, m, w, rows, cols, o0, o1)
			return
		}
	}
	dotGroupsAsm(g, t, y, ystride, xq, m, w, rows, cols, o0, o1)
}

// dotGroupsAsm runs the grouped kernel g over the groups of rows [o0, o1) (o0 a whole
// group), a run of groups a call may cover at a time; a last group cut by the matrix's end
// is computed into a scratch row and its rows that exist copied out.
func dotGroupsAsm(g groupKernel, t dtype.DType, y []float32, ystride int, xq []byte, m int, w []byte, rows, cols, o0, o1 int) {
	if o0 >= o1 || m == 0 {
		return
	}
	gb, arb, n := GroupRows*t.Bytes(cols), ActsFor(t).RowBytes(cols), cols/t.BlockSize()
	run := max(lockstepGroups, dotCallBytes/gb/lockstepGroups*lockstepGroups)
	whole := (o1 - o0) / GroupRows // groups whose rows all exist
	g0 := o0 / GroupRows
	for i := range m {
		_ = xq[(i+1)*arb-1]
		a := &xq[i*arb]
		for k := 0; k < whole; k += run {
			groups := min(run, whole-k)
			_ = w[(g0+k+groups)*gb-1]
			_ = y[i*ystride+o0+GroupRows*(k+groups)-1]
			g(&y[i*ystride+o0+GroupRows*k], &w[(g0+k)*gb], groups, a, n)
		}
		if rest := (o1 - o0) % GroupRows; rest != 0 {
			var last [GroupRows]float32
			_ = w[(g0+whole+1)*gb-1]
			g(&last[0], &w[(g0+whole)*gb], 1, a, n)
			copy(y[i*ystride+o0+GroupRows*whole:i*ystride+o1], last[:rest])
		}
	}
}
