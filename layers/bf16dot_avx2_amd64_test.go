//go:build amd64 && !noasm

package layers

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/vec"
)

// isaBF16DotKernels are the bf16-dot kernels checkBF16Dot forces beside LinearBF16DotRows:
// the AVX2 emulation and, where the CPU has AVX512_BF16, VDPBF16PS itself.
func isaBF16DotKernels() []bf16DotKernel {
	var ks []bf16DotKernel
	if vec.Accelerated() {
		ks = append(ks, bf16DotKernel{"avx2", linearBF16DotAVX2})
	}
	if vec.AcceleratedBF16Dot() {
		ks = append(ks, bf16DotKernel{"avx512bf16", linearBF16DotAVX512})
	}
	return ks
}

// TestBF16Dot4AVX2MatchesDPBF16 pins the AVX2 emulation of VDPBF16PS to dpbf16 (itself
// pinned to the instruction) bit for bit, any NaN matching any NaN, in every regime of
// dpbf16Case: subnormal inputs read as zero and subnormal sums flushed come from MXCSR's
// DAZ and FTZ, which the kernel must also restore.
func TestBF16Dot4AVX2MatchesDPBF16(t *testing.T) {
	if !vec.Accelerated() {
		t.Skip("CPU lacks AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(3, 4))
	var x [32]uint16
	var w [4][32]uint16
	off := [4]int{0, 32, 64, 96}
	for n := range 20000 {
		var acc, got [4][16]float32
		for o := range acc {
			dpbf16Case(r, n%4, &acc[o], &x, &w[o]) // x drawn again each time: the last one stays
		}
		got = acc
		bf16Dot4AVX2(&got, &x[0], unsafe.Pointer(&w[0][0]), &off, 1)
		for o := range acc {
			for l := range acc[o] {
				want := dpbf16(acc[o][l], x[2*l], x[2*l+1], w[o][2*l], w[o][2*l+1])
				if want != want && got[o][l] != got[o][l] {
					continue
				}
				require.Equal(t, math.Float32bits(want), math.Float32bits(got[o][l]),
					"regime %d output %d lane %d: acc %x x (%04x, %04x) w (%04x, %04x)", n%4, o, l,
					math.Float32bits(acc[o][l]), x[2*l], x[2*l+1], w[o][2*l], w[o][2*l+1])
			}
		}
	}
	// MXCSR is back to Go's on the kernel's thread: a subnormal sum is kept, not flushed.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var acc [4][16]float32
	bf16Dot4AVX2(&acc, &x[0], unsafe.Pointer(&w[0][0]), &off, 1)
	tiny := math.Float32frombits(1)
	// (bits, not floats: under DAZ the comparison itself would read tiny as zero)
	require.Equal(t, math.Float32bits(tiny), math.Float32bits(addNoInline(tiny, 0)), "a subnormal flushed after the kernel: MXCSR not restored")
}

//go:noinline
func addNoInline(a, b float32) float32 { return a + b }
