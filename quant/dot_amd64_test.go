//go:build amd64 && !noasm

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// isaKernels are the assembly kernel sets this CPU runs, by name.
func isaKernels(t *testing.T) map[string]map[dtype.DType]asmKernel {
	sets := map[string]map[dtype.DType]asmKernel{}
	if vec.AcceleratedAVX512() {
		sets["avx512"] = avx512Kernels
	}
	if vec.Accelerated() {
		sets["avx2"] = avx2Kernels
	}
	if len(sets) == 0 {
		t.Skip("this CPU runs none of the assembly kernels")
	}
	return sets
}

// guard is the value every output outside the rows a call computes must keep.
var guard = float32(math.Float32frombits(0x7fc0dead))

// requireKernelMatchesGo runs kernel k and the Go kernel on the same rows and requires
// bitwise equal outputs, and untouched guards around them.
func requireKernelMatchesGo(t *testing.T, k asmKernel, typ dtype.DType, r *rand.Rand, rows, cols, m, o0, o1 int) {
	t.Helper()
	w := randRows(t, r, typ, rows, cols)
	a := ActsFor(typ)
	x := randValues(r, m*cols, 1)
	xq := make([]byte, m*a.RowBytes(cols))
	require.NoError(t, QuantizeActs(a, xq, x, cols))
	stride := rows + 3
	want, got := make([]float32, m*stride), make([]float32, m*stride)
	for i := range want {
		want[i], got[i] = guard, guard
	}
	dotRowsGo(typ, want, stride, xq, m, w, cols, o0, o1)
	dotRowsAsm(k, typ, got, stride, xq, m, w, cols, o0, o1)
	for i := range want {
		require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "output %d (row %d of x, weight row %d): Go %v, asm %v", i, i/stride, i%stride, want[i], got[i])
	}
}

// TestAsmKernelsMatchGo: every assembly kernel gives the Go kernel's bits for every count
// of blocks around the chunk sizes (1 to 40 32-value blocks, 1 to 20 super-blocks), odd
// row counts, sub-ranges of rows and several rows of activations.
func TestAsmKernelsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for isa, kernels := range isaKernels(t) {
		for typ, k := range kernels {
			maxBlocks := 40
			if typ.BlockSize() == kBlock {
				maxBlocks = 20
			}
			t.Run(fmt.Sprintf("%s/%v", isa, typ), func(t *testing.T) {
				for n := 1; n <= maxBlocks; n++ {
					requireKernelMatchesGo(t, k, typ, r, 5, n*typ.BlockSize(), 1, 0, 5)
				}
				requireKernelMatchesGo(t, k, typ, r, 7, 16*typ.BlockSize(), 3, 1, 6)
				requireKernelMatchesGo(t, k, typ, r, 300, 2*typ.BlockSize(), 2, 3, 299) // several calls
			})
		}
	}
}

// FuzzAsmKernels compares every assembly kernel with the Go kernel on fuzzed shapes and
// values.
func FuzzAsmKernels(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(1), uint8(2))
	f.Add(uint64(7), uint8(17), uint8(4), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, blocks, rows, m uint8) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e37))
		for _, kernels := range isaKernels(t) {
			for typ, k := range kernels {
				n := 1 + int(blocks)%48
				if typ.BlockSize() == kBlock {
					n = 1 + int(blocks)%12
				}
				nr := 1 + int(rows)%9
				requireKernelMatchesGo(t, k, typ, r, nr, n*typ.BlockSize(), 1+int(m)%4, 0, nr)
			}
		}
	})
}

// requireActsAsmMatchesGo quantizes one row with the assembly and with the Go loop and
// requires the same bytes.
func requireActsAsmMatchesGo(t *testing.T, a Acts, x []float32) {
	t.Helper()
	rb := a.RowBytes(len(x))
	want, got := make([]byte, rb), make([]byte, rb)
	limit := float32(actsLimit)
	if a == Acts16x256 {
		limit = splitLimit
	}
	var block [kBlock]float32
	quantRowGo(a, want, x, 0, len(x), limit, &block)
	for _, avx512 := range []bool{true, false} {
		if avx512 && !vec.AcceleratedAVX512() {
			continue
		}
		clear(got)
		require.True(t, quantRowISA(a, got, x, avx512))
		require.Equal(t, want, got, "%v row of %d (AVX-512 %v)", a, len(x), avx512)
	}
}

// TestQuantActsAsmMatchesGo: the assembly quantizes rows of every length to the Go loop's
// bytes, zeros, huge and tiny values, NaN and infinities included.
func TestQuantActsAsmMatchesGo(t *testing.T) {
	if !vec.Accelerated() {
		t.Skip("this CPU runs no assembly quantizer")
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, a := range []Acts{Acts16x32, Acts16x256} {
		for nb := 1; nb <= 9; nb++ {
			x := randValues(r, nb*a.Block(), 1)
			requireActsAsmMatchesGo(t, a, x)
			clear(x[:a.Block()])
			x[len(x)-1] = 3e38
			x[len(x)-2] = 1e-40
			requireActsAsmMatchesGo(t, a, x)
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
				x[a.Block()/2] = bad
				requireActsAsmMatchesGo(t, a, x)
			}
		}
	}
}

// FuzzQuantActsAsm compares the assembly quantizer with the Go loop on fuzzed values.
func FuzzQuantActsAsm(f *testing.F) {
	f.Add(uint64(1), uint8(2), 1.0)
	f.Fuzz(func(t *testing.T, seed uint64, blocks uint8, scale float64) {
		if !vec.Accelerated() {
			t.Skip("this CPU runs no assembly quantizer")
		}
		r := rand.New(rand.NewPCG(seed, seed+1))
		for _, a := range []Acts{Acts16x32, Acts16x256} {
			x := randValues(r, (1+int(blocks)%8)*a.Block(), math.Abs(scale)+1e-30)
			requireActsAsmMatchesGo(t, a, x)
		}
	})
}
