package comm

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestAllReduceWaitRunsOnHost: each rank's host goroutine issues blocking all-reduces
// (AllReduceWait) on its idle stream, so every call's kernel runs on that goroutine (the
// stream counts it); the results are bitwise those of AllReduceProto and Synchronize, and
// the flight recorder closed every call.
func TestAllReduceWaitRunsOnHost(t *testing.T) {
	const calls = 20
	for _, n := range []int{2, 4} {
		g := newGroup(t, n, device.NVSwitch, Config{})
		for _, algo := range []Algo{OneShot, TwoShot, Auto, Ring, Tree} {
			t.Run(fmt.Sprintf("n=%d/%v", n, algo), func(t *testing.T) {
				const count = 300
				ins, want, got := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
				Fill(ins, count, uint64(n))
				for r := range n {
					require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, ins[r], want[r], count))
				}
				for r, err := range g.syncAll() {
					require.NoError(t, err, "rank %d", r)
				}
				before := make([]uint64, n)
				for r, s := range g.streams {
					before[r] = s.HostLaunches()
				}
				var wg sync.WaitGroup
				errs := make([]error, n)
				for r := range n {
					wg.Go(func() {
						for range calls {
							if errs[r] = g.c.Rank(r).AllReduceWait(g.streams[r], algo, ProtoAuto, ins[r], got[r], count); errs[r] != nil {
								return
							}
						}
					})
				}
				wg.Wait()
				for r := range n {
					require.NoError(t, errs[r], "rank %d", r)
					require.Equal(t, want[r].Float32s(), got[r].Float32s(), "rank %d", r)
					require.Equal(t, uint64(calls), g.streams[r].HostLaunches()-before[r], "rank %d: calls run on the host", r)
					last, ok := g.c.Rank(r).rec.Last()
					require.True(t, ok)
					require.Equal(t, Done, last.State, "rank %d's last record", r)
				}
			})
		}
	}
}
