package comm

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestStarMatchesOneShotBits: the star's rank-0 sum in rank order is one-shot's, bit for
// bit, on every rank, for every dtype, world sizes odd and even, and messages of several
// chunks (the 16 KiB staging buffer), out of place and in place.
func TestStarMatchesOneShotBits(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		g := newGroup(t, n, device.NVSwitch, Config{BufferBytes: 16 << 10})
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
			for _, count := range []int{1, 1000 + 3, 20_000 + 7} {
				t.Run(fmt.Sprintf("n=%d/%v/count=%d", n, dt, count), func(t *testing.T) {
					ins, want, outs := g.alloc(t, dt, count), g.alloc(t, dt, count), g.alloc(t, dt, count)
					Fill(ins, count, uint64(n*count))
					g.allReduceOnce(t, Choice{Algo: OneShot}, ins, want, count)
					g.allReduceOnce(t, Choice{Algo: Star}, ins, outs, count)
					for r := range n {
						requireSameBits(t, want[r], outs[r], count, "rank %d: star against one-shot", r)
					}
					g.allReduceOnce(t, Choice{Algo: Star}, ins, ins, count) // in place
					for r := range n {
						requireSameBits(t, want[r], ins[r], count, "rank %d: star in place against one-shot", r)
					}
				})
			}
		}
	}
}

// TestStarRootReduces: in a star all-reduce rank 0 alone reduces, into its tmp buffer,
// which every rank then copies: afterwards rank 0's tmp buffer holds the result's bits and
// every other rank's still holds the sentinel written before. One-shot, whose bits the
// star shares, reduces straight into each output and leaves every tmp buffer alone.
func TestStarRootReduces(t *testing.T) {
	const n, count = 4, 3000
	const sentinel = 0x7fc0dead // a NaN no sum produces from Fill's finite inputs
	for _, tc := range []struct {
		algo        Algo
		rootReduces bool
	}{
		{Star, true},
		{OneShot, false},
	} {
		t.Run(tc.algo.String(), func(t *testing.T) {
			g := newGroup(t, n, device.NVSwitch, Config{})
			ins, outs := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
			Fill(ins, count, 3)
			for r := range n {
				tmp := g.c.ranks[r].peers[r].tmpF32[:count]
				for i := range tmp {
					tmp[i] = math.Float32frombits(sentinel)
				}
			}
			g.allReduceOnce(t, Choice{Algo: tc.algo}, ins, outs, count)
			checkAllReduce(t, ins, outs, count)
			for r := range n {
				tmp := g.c.ranks[r].peers[r].tmpF32[:count]
				for i, got := range tmp {
					if r == 0 && tc.rootReduces {
						require.Equal(t, math.Float32bits(outs[0].Float32s()[i]), math.Float32bits(got),
							"element %d: rank 0's tmp buffer should hold the sum every rank copied", i)
						continue
					}
					require.Equal(t, uint32(sentinel), math.Float32bits(got),
						"element %d of rank %d's tmp buffer: only a star's root reduces into it", i, r)
				}
			}
		})
	}
}

// TestAutotuneSkipsStar: the star is a baseline, run only when named: Autotune measures
// every other algorithm of the node but never issues a star call, so no tuned table can
// hold it, and a model is never offered it.
func TestAutotuneSkipsStar(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{BufferBytes: 64 << 10})
	_, err := g.c.Autotune(g.streams, TuneOptions{MinBytes: 64, MaxBytes: 256, Measure: MeasureOptions{Target: time.Millisecond}})
	require.NoError(t, err)
	calls := map[Algo]int64{}
	for _, st := range g.c.Recorder(0).Stats() {
		calls[st.Algo] += st.Calls
	}
	require.Positive(t, calls[OneShot], "Autotune measured one-shot")
	require.Positive(t, calls[Lamport], "Autotune measures algorithms that are never offered")
	require.Zero(t, calls[Star], "Autotune issued star calls")
	for _, f := range []device.Fabric{device.NVSwitch, device.NVLinkMesh, device.PCIe} {
		for _, hosts := range []int{1, 2} {
			require.NotContains(t, Offered(f, true, hosts, 8), Star, "%v over %d hosts", f, hosts)
		}
	}
}
