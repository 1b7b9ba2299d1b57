package comm

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// group is a node, a communicator over it and one stream per rank.
type group struct {
	node    *device.Node
	c       *Communicator
	streams []*device.Stream
}

func newGroup(t testing.TB, n int, fabric device.Fabric, cfg Config) *group {
	t.Helper()
	node, err := device.NewNode(device.NodeConfig{Devices: n, SMs: 2, Fabric: fabric})
	require.NoError(t, err)
	t.Cleanup(func() { _ = node.Close() })
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	c, err := New(node, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	g := &group{node: node, c: c}
	for r := range n {
		s, err := c.Rank(r).Device().NewStream("comm", 0)
		require.NoError(t, err)
		g.streams = append(g.streams, s)
	}
	return g
}

// alloc allocates one buffer of count elements per rank.
func (g *group) alloc(t testing.TB, dt dtype.DType, count int) []*device.Buffer {
	t.Helper()
	bufs := make([]*device.Buffer, g.c.Size())
	for r := range bufs {
		b, err := g.c.Rank(r).Device().Alloc(dt, count)
		require.NoError(t, err)
		bufs[r] = b
	}
	return bufs
}

// checkAllReduce verifies outs against the float64 sum of the inputs and that every rank
// holds the same bits.
func checkAllReduce(t testing.TB, ins, outs []*device.Buffer, count int) {
	t.Helper()
	if wrong := CountWrong(ins, outs, count); wrong > 0 {
		for i := range count { // name the first wrong element
			exact := 0.0
			for _, in := range ins {
				exact += elementF64(in, i)
			}
			for r, out := range outs {
				if got := elementF64(out, i); got != elementF64(outs[0], i) || math.Abs(got-exact) > 1e-3*math.Max(1, math.Abs(exact)) {
					require.Failf(t, "wrong all-reduce", "%d wrong elements; rank %d element %d: got %g, want %g", wrong, r, i, got, exact)
				}
			}
		}
		require.Failf(t, "wrong all-reduce", "%d wrong elements", wrong)
	}
}

// syncAll waits for every rank's stream and returns their errors.
func (g *group) syncAll() []error {
	errs := make([]error, len(g.streams))
	for r, s := range g.streams {
		errs[r] = s.Synchronize()
	}
	return errs
}
