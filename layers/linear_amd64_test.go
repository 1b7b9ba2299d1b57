//go:build amd64 && !noasm

package layers

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// TestLinearAVX2Active cross-checks vec.Accelerated with /proc/cpuinfo, so that the
// differential tests are known to have run the assembly where the CPU has it.
func TestLinearAVX2Active(t *testing.T) {
	t.Logf("vec.Accelerated() = %v", vec.Accelerated())
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo to cross-check CPUID against: %v", err)
	}
	var flags []string
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = strings.Fields(v)
			break
		}
	}
	want := slices.Contains(flags, "avx2") && slices.Contains(flags, "f16c") && slices.Contains(flags, "fma")
	require.Equal(t, want, vec.Accelerated(), "/proc/cpuinfo flags avx2+f16c+fma vs vec.Accelerated")
}

// TestLinearAVX2Kernels calls the kernels directly: for 1, 2 and 3 rows of x at any stride,
// from non-zero partial sums, tile after tile, with any 4 weight rows (repeated ones
// included) at unaligned element offsets, they must leave exactly fmaAcc's partial sums for
// every (row of x, weight row).
func TestLinearAVX2Kernels(t *testing.T) {
	if !vec.Accelerated() {
		t.Skip("CPU lacks AVX2/F16C: the assembly does not run")
	}
	r := rand.New(rand.NewPCG(41, 42))
	const rows, cols, maxM = 7, 1043, 3
	for _, dt := range dtypes {
		w := randMatrix(r, dt, rows, cols)
		wide := make([]float32, rows*cols) // w widened, for fmaAcc
		var base unsafe.Pointer
		if dt == dtype.F32 {
			copy(wide, w.F32s())
			base = unsafe.Pointer(&w.F32s()[0])
		} else {
			vec.Widen(dt, wide, w.Bits())
			base = unsafe.Pointer(&w.Bits()[0])
		}
		x := randF32(r, maxM*(cols+8), 2)
		for _, tiles := range [][]int{{8}, {16, 8}, {1000, 16}, {520, 504}, {8, 8, 8, 512}} {
			for m := 1; m <= maxM; m++ {
				var off [linearRowBlock]int
				for i := range off {
					off[i] = r.IntN(rows)*cols + r.IntN(3)
				}
				if r.IntN(2) == 0 {
					off[3] = off[0] // a padded block
				}
				x0, stride := r.IntN(3), cols+r.IntN(5)
				var got, want [maxM][linearRowBlock][Lanes]float32
				for mi := range m {
					for q := range got[mi] {
						for l := range got[mi][q] {
							got[mi][q][l] = 2*r.Float32() - 1
						}
					}
				}
				want = got
				k := 0
				for _, n := range tiles {
					for mi := range m {
						xr := x[x0+mi*stride+k : x0+mi*stride+k+n]
						for q := range linearRowBlock {
							fmaAcc(&want[mi][q], xr, wide[off[q]+k:off[q]+k+n])
						}
					}
					toff := off
					for q := range toff {
						toff[q] += k
					}
					linear4AVX2(dt, &got[0], &x[x0+k], 4*stride, m, base, &toff, n)
					k += n
				}
				requireBits(t, flatAcc(&want), flatAcc(&got), fmt.Sprintf("%v M=%d tiles %v offsets %v", dt, m, tiles, off))
			}
		}
	}
}

// flatAcc views the partial sums of the rows of x as one slice.
func flatAcc(a *[3][linearRowBlock][Lanes]float32) []float32 {
	return unsafe.Slice(&a[0][0][0], len(a)*linearRowBlock*Lanes)
}
