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

// TestCapturedTwoLevel replays a captured two-level all-reduce on a 2×2 node, interleaved
// with eager calls and with new inputs every time: its flag epochs advance on the streams,
// so replays stay right, and it never reads peers' inputs in place.
func TestCapturedTwoLevel(t *testing.T) {
	const n, count = 4, 3000
	node, err := device.NewNode(device.NodeConfig{Devices: n, Hosts: 2, SMs: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = node.Close() })
	c, err := comm.New(node, comm.Config{Timeout: 20 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	streams := make([]*device.Stream, n)
	ins, outs := make([]*device.Buffer, n), make([]*device.Buffer, n)
	execs := make([]*Exec, n)
	for r := range n {
		dev := c.Rank(r).Device()
		streams[r] = stream(t, dev, "comm")
		ins[r], _ = dev.Alloc(dtype.BF16, count)
		outs[r], _ = dev.Alloc(dtype.BF16, count)
		g, err := Capture(streams[r], func() error {
			return c.Rank(r).AllReduceAlgo(streams[r], comm.TwoLevel, ins[r], outs[r], count)
		})
		require.NoError(t, err)
		execs[r], err = Instantiate(g)
		require.NoError(t, err)
	}
	registered, err := c.RegisterGraphBuffers()
	require.NoError(t, err)
	require.Zero(t, registered)
	for i := range 30 {
		comm.Fill(ins, count, uint64(i))
		for r := range n {
			if i%3 == 2 {
				require.NoError(t, c.Rank(r).AllReduceAlgo(streams[r], comm.TwoLevel, ins[r], outs[r], count))
			} else {
				require.NoError(t, execs[r].Launch(streams[r]))
			}
		}
		for _, s := range streams {
			require.NoError(t, s.Synchronize())
		}
		require.Zero(t, comm.CountWrong(ins, outs, count), fmt.Sprintf("round %d", i))
	}
}
