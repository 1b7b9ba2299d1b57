package comm

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

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
	return newNodeGroup(t, device.NodeConfig{Devices: n, SMs: 2, Fabric: fabric}, cfg)
}

// newNodeGroup is newGroup on a node configured as nc.
func newNodeGroup(t testing.TB, nc device.NodeConfig, cfg Config) *group {
	t.Helper()
	node, err := device.NewNode(nc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = node.Close() })
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	c, err := New(node, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	g := &group{node: node, c: c}
	for r := range c.Size() {
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

// checkAllReduce verifies outs against an oracle that shares no code with comm: the ranks'
// inputs as one [n, count] float64 host tensor (gorgonia), summed along the rank axis. Every
// rank's result must be within the dtype's tolerance of it and hold rank 0's bits.
func checkAllReduce(t testing.TB, ins, outs []*device.Buffer, count int) {
	t.Helper()
	n := len(ins)
	vals, abs := make([]float64, n*count), make([]float64, n*count)
	for r, in := range ins {
		for i := range count {
			vals[r*count+i] = elementF64(in, i)
			abs[r*count+i] = math.Abs(vals[r*count+i])
		}
	}
	sum := func(backing []float64) []float64 {
		d, err := tensor.New(tensor.WithShape(n, count), tensor.WithBacking(backing)).Sum(0)
		require.NoError(t, err)
		switch v := d.Data().(type) {
		case float64: // a reduction to one element may come back as a scalar
			return []float64{v}
		case []float64:
			return v
		}
		require.Failf(t, "oracle", "unexpected reduction result %T", d.Data())
		return nil
	}
	exact, absSum := sum(vals), sum(abs)
	dt := outs[0].DType()
	for i := range count {
		tol := Tolerance(dt, exact[i], absSum[i], n)
		for r, out := range outs {
			got := elementF64(out, i)
			if math.Abs(got-exact[i]) > tol || got != elementF64(outs[0], i) {
				require.Failf(t, "wrong all-reduce", "rank %d element %d: got %g, want %g (tolerance %g; rank 0 has %g)",
					r, i, got, exact[i], tol, elementF64(outs[0], i))
			}
		}
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
