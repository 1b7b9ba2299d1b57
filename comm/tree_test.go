package comm

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestTreeSums: at 8 ranks the tree sums in the order tree.go documents, bit for bit, and
// repeated calls give the same bits. The registered buffers hold 1040 f32, not a whole
// number of grain pairs, so an element's tree changes place in the staging buffer from one
// chunk to the next; counts fall around the grain, the chunk and below one slice.
func TestTreeSums(t *testing.T) {
	g := newGroup(t, 8, device.NVSwitch, Config{BufferBytes: 4160})
	for _, count := range []int{1, 511, 512, 513, 1025, 1040, 1041, 3*1040 + 7} {
		t.Run(fmt.Sprintf("count=%d", count), func(t *testing.T) {
			ins, outs := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
			Fill(ins, count, 11)
			var first []float32
			for call := range 3 {
				for r := range 8 {
					require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], Tree, ins[r], outs[r], count))
				}
				for r, err := range g.syncAll() {
					require.NoError(t, err, "rank %d", r)
				}
				checkAllReduce(t, ins, outs, count)
				if call == 0 {
					first = append([]float32(nil), outs[0].Float32s()[:count]...)
				} else {
					require.Equal(t, first, outs[0].Float32s()[:count], "call %d", call)
				}
			}
			in := func(r, i int) float32 { return ins[r].Float32s()[i] }
			add := func(a, b float32) float32 { return float32(a + b) }
			// element 0 goes up tree 0: 7 → 3 → {1 → {0, 2}, 5 → {4, 6}}
			p1 := add(add(in(1, 0), in(0, 0)), in(2, 0))
			p5 := add(add(in(5, 0), in(4, 0)), in(6, 0))
			want := add(in(7, 0), add(add(in(3, 0), p1), p5))
			require.Equal(t, math.Float32bits(want), math.Float32bits(outs[0].Float32s()[0]), "element 0")
			if count > treeGrain { // element 512 goes up tree 1: 0 → 4 → {2 → {1, 3}, 6 → {5, 7}}
				x := treeGrain
				p2 := add(add(in(2, x), in(1, x)), in(3, x))
				p6 := add(add(in(6, x), in(5, x)), in(7, x))
				want := add(in(0, x), add(add(in(4, x), p2), p6))
				require.Equal(t, math.Float32bits(want), math.Float32bits(outs[0].Float32s()[x]), "element %d", x)
			}
		})
	}
}

// TestTreeElemsCountsRuns: treeElems, which counts a span's elements of a tree in closed
// form, agrees with walking the span's runs (treeRuns) for chunks at any offset and spans
// that start, end and lie inside grains.
func TestTreeElemsCountsRuns(t *testing.T) {
	for off := 0; off < 3*treeGrain; off += 97 {
		for x := 0; x < 4*treeGrain; x += 61 {
			for e := x; e < 4*treeGrain+100; e += 53 {
				for tr := range 2 {
					want := 0
					treeRuns(off, x, e, tr, func(a, z int) { want += z - a })
					require.Equal(t, want, extent{x: x, e: e, tree: tr}.len(off), "chunk at %d, span [%d, %d), tree %d", off, x, e, tr)
				}
			}
		}
	}
}
