package comm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestOneShotAlternates pins the alternating one-shot: a small one-shot call meets its
// peers at one barrier, not two (block 0's barrier count), and leaves the closing one to the
// next kernel that is not an alternating one-shot, which meets it first (settle). Calls
// issued back to back, each with inputs of its own, mixed with two-shot and ring calls that
// write the same staging buffer, all sum what their own inputs hold: a call that staged
// into the half its peers still read, or a two-shot that did not settle first, would hand
// a peer another call's inputs (and, under -race, race with the peer's reads).
func TestOneShotAlternates(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("tp%d", n), func(t *testing.T) {
			const count = 256
			g := newGroup(t, n, device.NVSwitch, Config{})
			run := func(algos ...Algo) {
				ins, outs := make([][]*device.Buffer, len(algos)), make([][]*device.Buffer, len(algos))
				for i, algo := range algos {
					ins[i], outs[i] = g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
					Fill(ins[i], count, uint64(100+i))
					for r := range n {
						require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, ins[i][r], outs[i][r], count))
					}
				}
				for r, err := range g.syncAll() {
					require.NoError(t, err, "rank %d", r)
				}
				for i := range algos {
					checkAllReduce(t, ins[i], outs[i], count)
				}
			}
			run(OneShot, OneShot, OneShot)
			for r := range n {
				require.Equal(t, uint32(3), g.c.Rank(r).counter[0], "rank %d: barriers of three one-shot calls", r)
				require.True(t, g.c.Rank(r).unread, "rank %d: the last one-shot's closing barrier is due", r)
			}
			run(TwoShot, OneShot, OneShot, Ring, OneShot, TwoShot, TwoShot, OneShot)
			for r := range n {
				require.True(t, g.c.Rank(r).unread, "rank %d", r)
			}
		})
	}
}
