package cudagraph

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestCapturedReduceScatter replays a captured direct reduce-scatter, which registers its
// input so that replays read the peers' slices in place, and a captured ring one, which
// stages; both stay right with new inputs in the same buffers, interleaved with eager calls.
func TestCapturedReduceScatter(t *testing.T) {
	const n, count = 4, 1000 + 3
	node := newDevice(t, n)
	c, err := comm.New(node, comm.Config{Timeout: 20 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	streams := make([]*device.Stream, n)
	ins, outs := make([]*device.Buffer, n), make([]*device.Buffer, n)
	for r := range n {
		dev := c.Rank(r).Device()
		streams[r] = stream(t, dev, "comm")
		ins[r], _ = dev.Alloc(dtype.BF16, n*count)
		outs[r], _ = dev.Alloc(dtype.BF16, count)
	}
	for _, algo := range []comm.Algo{comm.OneShot, comm.Ring} {
		t.Run(algo.String(), func(t *testing.T) {
			execs := make([]*Exec, n)
			for r := range n {
				g, err := Capture(streams[r], func() error {
					return c.Rank(r).ReduceScatterWith(streams[r], algo, ins[r], outs[r], count)
				})
				require.NoError(t, err)
				execs[r], err = Instantiate(g)
				require.NoError(t, err)
			}
			registered, err := c.RegisterGraphBuffers()
			require.NoError(t, err)
			require.Equal(t, map[bool]int{true: 1, false: 0}[algo == comm.OneShot], registered)
			saved := c.GraphBytesSaved()
			for i := range 12 {
				comm.Fill(ins, n*count, uint64(i))
				for r := range n {
					if i%3 == 2 {
						require.NoError(t, c.Rank(r).ReduceScatterWith(streams[r], algo, ins[r], outs[r], count))
					} else {
						require.NoError(t, execs[r].Launch(streams[r]))
					}
				}
				for _, s := range streams {
					require.NoError(t, s.Synchronize())
				}
				require.Zero(t, comm.CountWrongReduceScatter(ins, outs, count), fmt.Sprintf("round %d", i))
			}
			if algo == comm.OneShot { // 8 replays on 4 ranks skipped staging n·count bf16 each
				require.Equal(t, int64(8*n*n*count*2), c.GraphBytesSaved()-saved)
			}
		})
	}
}
