//go:build amd64 && !noasm

package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/testutil"
	"github.com/tpslice/tpslice/vec"
)

// isaLinearKernels are the instruction sets' kernels the differential tests force for any
// M, beside the exported LinearRows (which picks one by M and the CPU): the AVX2 kernels
// and, where the CPU has AVX-512, the GEMM.
func isaLinearKernels() []linearKernel {
	var ks []linearKernel
	if vec.Accelerated() {
		ks = append(ks, linearKernel{"avx2", linearRowsAVX2})
	}
	if vec.AcceleratedAVX512() {
		ks = append(ks, linearKernel{"avx512", linearRowsAVX512})
	}
	return ks
}

// TestGEMMAVX512Kernels calls the fused kernels directly: for 0 to 9 rows of x (blocks of
// 4 and the rows after them) and for 16 and 41 (enough steps that the packing ends inside
// the blocks' loops), at any stride, from non-zero partial sums, k-tile after k-tile (each
// call packing the next one, the first packed by a call without rows), with any 12 weight
// rows (repeated ones included) at unaligned element offsets, they must leave exactly
// fmaAcc's partial sums for every (row of x, weight row).
func TestGEMMAVX512Kernels(t *testing.T) {
	if !vec.AcceleratedAVX512() {
		t.Skip("CPU lacks AVX-512: the GEMM does not run")
	}
	r := rand.New(rand.NewPCG(43, 44))
	const rows, cols, maxM = 11, 1043, 41
	for _, dt := range dtypes {
		w := randMatrix(r, dt, rows, cols)
		wide := make([]float32, rows*cols) // w widened, for fmaAcc
		if dt == dtype.F32 {
			copy(wide, w.F32s())
		} else {
			vec.Widen(dt, wide, w.Bits())
		}
		base := unsafe.Pointer(unsafe.SliceData(w.Data))
		x := randF32(r, maxM*(cols+8), 2)
		var panels [2][]float32 // room for the longest k-tile below
		for i := range panels {
			panels[i] = make([]float32, 512*gemmCols)
		}
		for _, tiles := range [][]int{{8}, {16, 8}, {512, 16}, {504, 512}, {8, 8, 8, 512}} {
			for _, m := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, maxM} {
				var off [gemmCols]int
				for i := range off {
					off[i] = r.IntN(rows)*cols + r.IntN(3)
				}
				if r.IntN(2) == 0 {
					off[gemmCols-1], off[gemmCols-2] = off[gemmCols-3], off[gemmCols-3] // a padded tile
				}
				x0, stride := r.IntN(3), cols+r.IntN(5)
				var got, want [maxM][gemmCols][Lanes]float32
				for mi := range m {
					for j := range got[mi] {
						for l := range got[mi][j] {
							got[mi][j][l] = 2*r.Float32() - 1
						}
					}
				}
				want = got
				next := func(i, k int) *gemmNext { // k-tile i (at element k) into panels[i%2]
					var nx gemmNext
					if i < len(tiles) {
						for j, o := range off {
							nx.rows[j] = unsafe.Add(base, (o+k)*w.DType.Size())
						}
						nx.panel, nx.n = &panels[i%2][0], tiles[i]
					}
					return &nx
				}
				gemmTilePackAVX512(dt, &got[0], &x[0], 0, 0, &panels[1][0], Lanes, next(0, 0))
				k := 0
				for i, n := range tiles {
					for mi := range m {
						xr := x[x0+mi*stride+k : x0+mi*stride+k+n]
						for j := range gemmCols {
							fmaAcc(&want[mi][j], xr, wide[off[j]+k:off[j]+k+n])
						}
					}
					gemmTilePackAVX512(dt, &got[0], &x[x0+k], 4*stride, m, &panels[i%2][0], n, next(i+1, k+n))
					k += n
				}
				flat := func(a *[maxM][gemmCols][Lanes]float32) []float32 {
					return unsafe.Slice(&a[0][0][0], maxM*gemmCols*Lanes)
				}
				requireBits(t, flat(&want), flat(&got), fmt.Sprintf("%v M=%d tiles %v offsets %v", dt, m, tiles, off))
			}
		}
	}
}

// BenchmarkGEMMPaths reports GFLOP/s (2·M·out·in per call) of the kernels LinearRows can
// run for M rows of x at the medium preset's shapes (QKV 4096×2048, down 2048×5632), on one
// worker: the AVX2 kernels ("avx2": what M ≥ 2 ran before the GEMM), the AVX-512 GEMM
// ("avx512") and the portable Go ("go", at M ≤ 4 only), side by side in one run.
// cpuGFLOP/s divides by the process's CPU time instead of the wall clock, which holds
// still where neighbours take the cores away for a while. Compare medians of interleaved
// rounds:
//
//	go test -run '^$' -bench GEMMPaths -count 5 -benchtime 3x ./layers/
func BenchmarkGEMMPaths(b *testing.B) {
	if !vec.AcceleratedAVX512() {
		b.Skip("CPU lacks AVX-512: the GEMM does not run")
	}
	r := rand.New(rand.NewPCG(1, 1))
	impls := []linearKernel{{"avx2", linearRowsAVX2}, {"avx512", linearRowsAVX512}, {"go", linearRowsGo}}
	for _, shape := range []struct{ out, in int }{{4096, 2048}, {2048, 5632}} {
		for _, dt := range []dtype.DType{dtype.F16, dtype.BF16, dtype.F32} {
			w := randMatrix(r, dt, shape.out, shape.in)
			for _, m := range []int{2, 3, 4, 8, 16, 32, 128} {
				x := randF32(r, m*shape.in, 1)
				y := make([]float32, m*shape.out)
				for _, impl := range impls {
					if impl.name == "go" && m > 4 {
						continue
					}
					b.Run(fmt.Sprintf("%dx%d/%v/M=%d/impl=%s", shape.out, shape.in, dt, m, impl.name), func(b *testing.B) {
						cpu0 := testutil.CPUSeconds(b)
						for b.Loop() {
							impl.fn(y, x, w, m, 0, shape.out)
						}
						flops := 2 * float64(m*shape.out*shape.in) * float64(b.N)
						b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						b.ReportMetric(flops/(testutil.CPUSeconds(b)-cpu0)/1e9, "cpuGFLOP/s")
					})
				}
			}
		}
	}
}

// TestGEMMBuffersAligned: wherever a goroutine's stack puts a GEMM's buffers (any 4-byte
// offset), the panels and partial sums start on a cache line and end inside the buffers.
func TestGEMMBuffersAligned(t *testing.T) {
	size := unsafe.Sizeof(gemmBuffers{})
	raw := make([]float32, size/4+gemmLine)
	for shift := range gemmLine {
		b := (*gemmBuffers)(unsafe.Pointer(&raw[shift]))
		lo, hi := uintptr(unsafe.Pointer(b)), uintptr(unsafe.Pointer(b))+size
		panels, acc := b.aligned()
		for _, r := range []struct {
			name  string
			start unsafe.Pointer
			size  uintptr
		}{
			{"panels", unsafe.Pointer(panels), unsafe.Sizeof(*panels)},
			{"acc", unsafe.Pointer(acc), unsafe.Sizeof(*acc)},
		} {
			p := uintptr(r.start)
			require.Zero(t, p%64, "%s at shift %d", r.name, shift)
			require.True(t, p >= lo && p+r.size <= hi, "%s at shift %d outside the buffers", r.name, shift)
		}
	}
}
