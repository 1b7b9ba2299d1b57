package comm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestFullTwoHostNode runs every collective on the largest node there is, two hosts of
// eight (device.MaxNodeDevices ranks): each all-reduce algorithm the node offers under
// each of its protocols, the low-precision wires, and reduce-scatter + all-gather. The
// other tests stop at eight ranks, where arrays sized for one host still fit.
func TestFullTwoHostNode(t *testing.T) {
	const hosts, perHost, count = 2, device.MaxDevices, 3001
	n := hosts * perHost
	require.Equal(t, device.MaxNodeDevices, n)
	g := newHostsGroup(t, hosts, perHost, Config{})
	algos := Offered(device.NVSwitch, true, hosts, n)
	for _, a := range []Algo{Tree, Lamport} { // not offered across hosts, but they run when forced
		if g.c.Available(a) {
			algos = append(algos, a)
		}
	}
	for _, ch := range Choices(algos) {
		t.Run(ch.String(), func(t *testing.T) {
			ins, outs := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
			Fill(ins, count, 5)
			for r := range n {
				require.NoError(t, g.c.Rank(r).AllReduceProto(g.streams[r], ch.Algo, ch.Proto, ins[r], outs[r], count))
			}
			for r, err := range g.syncAll() {
				require.NoError(t, err, "rank %d", r)
			}
			checkAllReduce(t, ins, outs, count)
		})
	}
	for _, rs := range []Algo{OneShot, Ring} {
		t.Run(fmt.Sprintf("reducescatter-%v+allgather", rs), func(t *testing.T) {
			orig, gathered := g.alloc(t, dtype.F32, n*count), g.alloc(t, dtype.F32, n*count)
			slices := g.alloc(t, dtype.F32, count)
			Fill(orig, n*count, 9)
			for r := range n {
				require.NoError(t, g.c.Rank(r).ReduceScatterWith(g.streams[r], rs, orig[r], slices[r], count))
				require.NoError(t, g.c.Rank(r).AllGatherWith(g.streams[r], rs, slices[r], gathered[r], count))
			}
			for r, err := range g.syncAll() {
				require.NoError(t, err, "rank %d", r)
			}
			checkAllReduce(t, orig, gathered, n*count)
		})
	}
	for _, w := range []Wire{WireBF16, WireFP8} {
		wg := newHostsGroup(t, hosts, perHost, Config{Wire: w})
		for _, algo := range []Algo{OneShot, TwoShot} {
			t.Run(fmt.Sprintf("%v-wire/%v", w, algo), func(t *testing.T) {
				ins, outs := wg.alloc(t, dtype.F32, count), wg.alloc(t, dtype.F32, count)
				Fill(ins, count, 7)
				for r := range n {
					require.NoError(t, wg.c.Rank(r).AllReduceAlgo(wg.streams[r], algo, ins[r], outs[r], count))
				}
				for r, err := range wg.syncAll() {
					require.NoError(t, err, "rank %d", r)
				}
				for r := 1; r < n; r++ {
					require.Equal(t, outs[0].Float32s()[:count], outs[r].Float32s()[:count], "rank %d differs from rank 0", r)
				}
			})
		}
	}
}
