package comm

import (
	"math"
	"math/rand/v2"
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

// fill writes random values into each rank's buffer and returns them widened to float64.
func fill(rng *rand.Rand, bufs []*device.Buffer, count int) [][]float64 {
	vals := make([][]float64, len(bufs))
	for r, b := range bufs {
		vals[r] = make([]float64, count)
		for i := range count {
			x := float32(rng.NormFloat64())
			if b.DType() == dtype.F32 {
				b.Float32s()[i] = x
				vals[r][i] = float64(x)
			} else {
				h := dtype.FromF32(b.DType(), x)
				b.Uint16s()[i] = h
				vals[r][i] = float64(dtype.ToF32(b.DType(), h))
			}
		}
	}
	return vals
}

// element reads element i of a buffer as float64.
func element(b *device.Buffer, i int) float64 {
	if b.DType() == dtype.F32 {
		return float64(b.Float32s()[i])
	}
	return float64(dtype.ToF32(b.DType(), b.Uint16s()[i]))
}

// tolerance is how far a sum of terms whose magnitudes add to absSum may be from the exact
// sum: f32 accumulation error, plus one final rounding for 16-bit outputs.
func tolerance(dt dtype.DType, exact, absSum float64, n int) float64 {
	tol := float64(n)*absSum*math.Pow(2, -23) + 1e-30
	switch dt {
	case dtype.BF16:
		tol += math.Abs(exact) * math.Pow(2, -8)
	case dtype.F16:
		tol += math.Abs(exact)*math.Pow(2, -11) + math.Pow(2, -24)
	}
	return tol
}

// checkAllReduce verifies outs against the float64 sum of vals and that every rank holds
// the same bits.
func checkAllReduce(t testing.TB, vals [][]float64, outs []*device.Buffer, count int) {
	t.Helper()
	dt := outs[0].DType()
	for i := range count {
		exact, abs := 0.0, 0.0
		for _, v := range vals {
			exact += v[i]
			abs += math.Abs(v[i])
		}
		got := element(outs[0], i)
		if d := math.Abs(got - exact); d > tolerance(dt, exact, abs, len(vals)) {
			require.Failf(t, "wrong sum", "element %d: got %g, want %g (diff %g)", i, got, exact, d)
		}
	}
	bytes := count * dt.Size()
	ref := outs[0].Float32s()
	_ = ref
	for r := 1; r < len(outs); r++ {
		require.Equal(t, rawBytes(outs[0], bytes), rawBytes(outs[r], bytes), "rank %d's result differs from rank 0's", r)
	}
}

func rawBytes(b *device.Buffer, n int) []byte {
	out := make([]byte, n)
	if b.DType() == dtype.F32 {
		for i, f := range b.Float32s()[:n/4] {
			u := math.Float32bits(f)
			out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		}
		return out
	}
	for i, h := range b.Uint16s()[:n/2] {
		out[2*i], out[2*i+1] = byte(h), byte(h>>8)
	}
	return out
}

// syncAll waits for every rank's stream and returns their errors.
func (g *group) syncAll() []error {
	errs := make([]error, len(g.streams))
	for r, s := range g.streams {
		errs[r] = s.Synchronize()
	}
	return errs
}
