package fused

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
)

// TestFusedWire: on each low-precision wire the one-shot and two-shot variants give bitwise
// the unfused pair's result over the same all-reduce on the same wire (the blocks of scale
// and the rank order are the same), on every rank, for every world size, batches below and
// above n (the column and the row partition) and rows of 2 and 3 blocks of scale. Away
// from one rank the result differs from the exact wire's: the wire is really used.
func TestFusedWire(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6, 8} {
		for _, w := range []comm.Wire{comm.WireBF16, comm.WireFP8} {
			for _, v := range []Variant{OneShot, TwoShot} {
				testFusedWire(t, n, w, v)
			}
		}
	}
}

func testFusedWire(t *testing.T, n int, w comm.Wire, v Variant) {
	g := newRig(t, n, comm.Config{Algo: v.algo(), Wire: w, BufferBytes: 16 << 10})
	exact := newRig(t, n, comm.Config{Algo: v.algo()})
	for _, tokens := range []int{1, 3, 9} {
		for _, hidden := range []int{64, 96} {
			t.Run(fmt.Sprintf("n=%d/%v/%v/tokens=%d/hidden=%d", n, w, v, tokens, hidden), func(t *testing.T) {
				sh := Shape{Tokens: tokens, Hidden: hidden, Eps: 1e-5}
				count := tokens * hidden
				g.load(t, sh)
				exact.load(t, sh)
				residual0 := append([]float32(nil), g.residual[0].Float32s()[:count]...)
				g.run(t, Unfused, sh)
				exact.run(t, Unfused, sh)
				want := append([]float32(nil), g.out[0].Float32s()[:count]...)
				differs := false
				for i := range count {
					differs = differs || want[i] != exact.out[0].Float32s()[i]
				}
				require.Equal(t, n > 1, differs, "the %v wire changes the result exactly when something is exchanged", w)
				for r := range n {
					copy(g.residual[r].Float32s(), residual0)
				}
				g.run(t, v, sh)
				for r := range n {
					require.Equal(t, want, g.out[r].Float32s()[:count], "rank %d out", r)
				}
			})
		}
	}
}

// TestFusedWireRefuses: NVLS and the tree refuse a low-precision wire; on the fp8 wire
// rows that are not whole blocks of scale make the one-shot and two-shot variants refuse
// and Auto run unfused, with the unfused pair's bits.
func TestFusedWireRefuses(t *testing.T) {
	g := newRig(t, 2, comm.Config{Wire: comm.WireFP8})
	sh := Shape{Tokens: 3, Hidden: 48, Eps: 1e-5}
	g.load(t, sh)
	for _, v := range []Variant{NVLS, Tree} {
		err := AllReduceAddRMSNorm(g.c.Rank(1), g.streams[1], v, g.partial[1], g.residual[1], g.weight[1], g.out[1], sh)
		require.ErrorContains(t, err, fmt.Sprintf("fused: rank 1: variant %v does not run the fp8 all-reduce wire", v))
	}
	for _, v := range []Variant{OneShot, TwoShot} {
		err := AllReduceAddRMSNorm(g.c.Rank(0), g.streams[0], v, g.partial[0], g.residual[0], g.weight[0], g.out[0], sh)
		require.ErrorContains(t, err, "needs hidden a multiple of 32 (its blocks of scale), got 48")
	}
	count := sh.Tokens * sh.Hidden
	residual0 := append([]float32(nil), g.residual[0].Float32s()[:count]...)
	g.run(t, Unfused, sh)
	want := append([]float32(nil), g.out[0].Float32s()[:count]...)
	for r := range 2 {
		copy(g.residual[r].Float32s(), residual0)
	}
	g.run(t, Auto, sh)
	for r := range 2 {
		require.Equal(t, want, g.out[r].Float32s()[:count], "rank %d", r)
	}
}
