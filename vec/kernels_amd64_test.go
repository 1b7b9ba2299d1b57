//go:build amd64 && !noasm

package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/dtype"
)

// TestCPUDetect cross-checks the CPUID detection with the kernel's view of the CPU, so the
// differential tests are known to have run the assembly.
func TestCPUDetect(t *testing.T) {
	t.Logf("useAVX2 = %v", useAVX2)
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
	want := slices.Contains(flags, "avx2") && slices.Contains(flags, "f16c")
	require.Equal(t, want, useAVX2, "/proc/cpuinfo flags avx2+f16c vs CPUID detection")
}

// addAccFirst is the add the sum kernels perform: for two NaNs x86 returns the first
// operand's payload (quieted), and the kernels always put the accumulator first.
func addAccFirst(acc, x float32) float32 {
	switch {
	case math.IsNaN(float64(acc)):
		return math.Float32frombits(math.Float32bits(acc) | 0x00400000)
	case math.IsNaN(float64(x)):
		return math.Float32frombits(math.Float32bits(x) | 0x00400000)
	}
	return acc + x
}

// TestSumKernelsNaNPayload pins the NaN rule of the vector bodies exactly: the payload that
// survives is the first NaN in source order (or the default NaN if one is made first).
// The vector body covers whole blocks of 32, so the lengths here are multiples of 32.
func TestSumKernelsNaNPayload(t *testing.T) {
	if !useAVX2 {
		t.Skip("CPU lacks AVX2/F16C: the assembly does not run")
	}
	r := rand.New(rand.NewPCG(11, 12))
	const n, nsrc = 32 * 40, 5
	t.Run("f32", func(t *testing.T) {
		srcs := make([][]float32, nsrc)
		for k := range srcs {
			srcs[k] = randSliceF32(r, n)
			for i := range srcs[k] {
				if r.IntN(3) == 0 {
					srcs[k][i] = math.Float32frombits(0x7f800001 + r.Uint32()%0x007fffff | r.Uint32()&0x80000000)
				}
			}
		}
		want, got := make([]float32, n), make([]float32, n)
		for i := range want {
			acc := srcs[0][i]
			for _, s := range srcs[1:] {
				acc = addAccFirst(acc, s[i])
			}
			want[i] = acc
		}
		SumF32(got, srcs)
		requireBitsF32(t, want, got, "SumF32")
		add := slices.Clone(srcs[0])
		AddF32(add, srcs[1])
		for i := range want {
			want[i] = addAccFirst(srcs[0][i], srcs[1][i])
		}
		requireBitsF32(t, want, add, "AddF32")
	})
	for _, typ := range dtypes16 {
		t.Run(typ.String(), func(t *testing.T) {
			srcs := make([][]uint16, nsrc)
			for k := range srcs {
				srcs[k] = randSlice16(r, typ, n)
			}
			want16, got16 := make([]uint16, n), make([]uint16, n)
			want32, got32 := make([]float32, n), make([]float32, n)
			for i := range want16 {
				acc := dtype.ToF32(typ, srcs[0][i])
				for _, s := range srcs[1:] {
					acc = addAccFirst(acc, dtype.ToF32(typ, s[i]))
				}
				want16[i], want32[i] = dtype.FromF32(typ, acc), acc
			}
			Sum16(typ, got16, srcs)
			Sum16ToF32(typ, got32, srcs)
			requireBits16(t, want16, got16, fmt.Sprintf("Sum16 %v", typ))
			requireBitsF32(t, want32, got32, fmt.Sprintf("Sum16ToF32 %v", typ))
		})
	}
}
