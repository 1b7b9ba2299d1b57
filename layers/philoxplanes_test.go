package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// requirePhiloxPlanes checks fillPhiloxPlanes and every kernel this CPU runs (AVX-512,
// AVX2, whatever TPSLICE_ISA picks) against the plain loop over Philox4x32, block by block,
// for blocks b0 .. b0+n−1.
func requirePhiloxPlanes(t *testing.T, seed, pos uint64, b0 uint32, n int) {
	t.Helper()
	keys := philoxRoundKeys(seed)
	kernels := map[string]func(p *philoxPlanes, keys *[20]uint32, pos uint64, b0 uint32, n int){
		"fill": func(p *philoxPlanes, keys *[20]uint32, pos uint64, b0 uint32, n int) {
			fillPhiloxPlanes(p, keys, seed, pos, b0, n)
		},
	}
	for name, k := range philoxPlaneKernels() {
		kernels[name] = k
	}
	key := [2]uint32{uint32(seed), uint32(seed >> 32)}
	for name, kernel := range kernels {
		var got philoxPlanes
		kernel(&got, &keys, pos, b0, n)
		for j := range n {
			want := Philox4x32(key, [4]uint32{b0 + uint32(j), uint32(pos), uint32(pos >> 32), 0})
			for w := range want {
				require.Equal(t, want[w], got[w][j], "%s: seed %#x pos %#x block %d+%d word %d", name, seed, pos, b0, j, w)
			}
		}
	}
}

// TestPhiloxPlanesMatchPhilox: every count of blocks, counters that wrap 2³², keys and
// positions with all bits set, and random ones.
func TestPhiloxPlanesMatchPhilox(t *testing.T) {
	for n := 0; n <= philoxPlaneBlocks; n++ {
		requirePhiloxPlanes(t, 0x0123456789abcdef, 7, uint32(n*3), n)
	}
	requirePhiloxPlanes(t, ^uint64(0), ^uint64(0), 0xFFFFFFF8-4, philoxPlaneBlocks)
	requirePhiloxPlanes(t, 0, 0, 0, philoxPlaneBlocks)
	r := rand.New(rand.NewPCG(11, 12))
	for range 200 {
		requirePhiloxPlanes(t, r.Uint64(), r.Uint64(), r.Uint32(), 1+r.IntN(philoxPlaneBlocks))
	}
}

// FuzzPhiloxPlanes: the kernel against the reference loop for any key, position, first
// block and count.
func FuzzPhiloxPlanes(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint32(0), uint8(64))
	f.Add(^uint64(0), ^uint64(0), ^uint32(0), uint8(9))
	f.Fuzz(func(t *testing.T, seed, pos uint64, b0 uint32, n uint8) {
		requirePhiloxPlanes(t, seed, pos, b0, int(n)%(philoxPlaneBlocks+1))
	})
}

// BenchmarkPhiloxPlanes: a plane of 64 blocks (256 tokens' draws), each kernel against the
// reference loop.
func BenchmarkPhiloxPlanes(b *testing.B) {
	keys := philoxRoundKeys(42)
	var p philoxPlanes
	for name, kernel := range philoxPlaneKernels() {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				kernel(&p, &keys, 7, 100, philoxPlaneBlocks)
			}
		})
	}
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			philoxPlanesGo(&p, 42, 7, 100, philoxPlaneBlocks)
		}
	})
	_ = fmt.Sprint(p[0][0])
}
