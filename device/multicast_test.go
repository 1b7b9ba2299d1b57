package device_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// allocAll allocates count elements of t on every device of n, in device order.
func allocAll(t *testing.T, n *device.Node, dt dtype.DType, count int) []*device.Buffer {
	t.Helper()
	var bufs []*device.Buffer
	for _, d := range n.Devices() {
		b, err := d.Alloc(dt, count)
		require.NoError(t, err)
		bufs = append(bufs, b)
	}
	return bufs
}

func TestMulticastRefusedWithoutSwitch(t *testing.T) {
	for _, f := range []device.Fabric{device.NVLinkMesh, device.PCIe} {
		t.Run(f.String(), func(t *testing.T) {
			n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1, Fabric: f})
			m, err := n.NewMulticast(allocAll(t, n, dtype.F32, 8))
			require.Error(t, err)
			require.Nil(t, m)
			require.Contains(t, err.Error(), f.String())
			require.Contains(t, err.Error(), "multicast")
		})
	}
}

func TestMulticastBindErrors(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 3, SMs: 1})
	other := newNode(t, device.NodeConfig{Devices: 2, SMs: 1})
	d0, d1, d2 := dev(t, n, 0), dev(t, n, 1), dev(t, n, 2)
	alloc := func(d *device.Device, dt dtype.DType, count int) *device.Buffer {
		b, err := d.Alloc(dt, count)
		require.NoError(t, err)
		return b
	}
	a0, a1, a2 := alloc(d0, dtype.F32, 8), alloc(d1, dtype.F32, 8), alloc(d2, dtype.F32, 8)
	a0b := alloc(d0, dtype.F32, 8)
	short := alloc(d1, dtype.F32, 7)
	h, err := a1.Export()
	require.NoError(t, err)
	peer, err := d2.OpenPeer(h)
	require.NoError(t, err)
	foreign := alloc(dev(t, other, 1), dtype.F32, 8)

	for _, tc := range []struct {
		name string
		bufs []*device.Buffer
		want string
	}{
		{"empty", nil, "at least one"},
		{"same device", []*device.Buffer{a0, a1, a0b}, "same device"},
		{"different sizes", []*device.Buffer{a0, short, a2}, "size"},
		{"peer view", []*device.Buffer{a0, a1, peer}, "peer"},
		{"other node", []*device.Buffer{a0, foreign}, "another node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := n.NewMulticast(tc.bufs)
			require.Error(t, err)
			require.Nil(t, m)
			require.Contains(t, err.Error(), tc.want)
		})
	}

	// The same bytes in another dtype bind: the dtype is named per access.
	m, err := n.NewMulticast([]*device.Buffer{a0, alloc(d1, dtype.BF16, 16)})
	require.NoError(t, err)
	require.Equal(t, 32, m.Bytes())
}

// fill writes random finite values of dt into b.
func fill(r *rand.Rand, b *device.Buffer, dt dtype.DType) {
	switch dt {
	case dtype.F32:
		for i := range b.Float32s() {
			b.Float32s()[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(20)-10)))
		}
	default:
		for i := range b.Uint16s() {
			b.Uint16s()[i] = dtype.FromF32(dt, float32(r.NormFloat64()*math.Pow(2, float64(r.IntN(10)-5))))
		}
	}
}

// element returns element i of b read as dt, widened to f32.
func element(b *device.Buffer, dt dtype.DType, i int) float32 {
	if dt == dtype.F32 {
		return b.Float32s()[i]
	}
	return dtype.ToF32(dt, b.Uint16s()[i])
}

func TestMulticastLoadReduce(t *testing.T) {
	for _, tc := range []struct {
		dt      dtype.DType
		devices int
		count   int
		offset  int
		n       int
	}{
		{dtype.F32, 1, 10, 0, 10},
		{dtype.F32, 2, 1000, 0, 1000},
		{dtype.F32, 4, 1000, 3, 997},
		{dtype.F32, 8, 4099, 17, 4000},
		{dtype.BF16, 2, 1000, 0, 1000},
		{dtype.BF16, 4, 1000, 1, 513},
		{dtype.BF16, 8, 4099, 0, 4099},
		{dtype.F16, 3, 1000, 0, 1000},
		{dtype.F16, 8, 4099, 99, 4000},
		{dtype.F16, 4, 64, 64, 0},
	} {
		t.Run(fmt.Sprintf("%v/n%d/%d@%d", tc.dt, tc.devices, tc.n, tc.offset), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.devices), uint64(tc.count)))
			n := newNode(t, device.NodeConfig{Devices: tc.devices, SMs: 1})
			bufs := allocAll(t, n, tc.dt, tc.count)
			for _, b := range bufs {
				fill(r, b, tc.dt)
			}
			m, err := n.NewMulticast(bufs)
			require.NoError(t, err)
			require.Equal(t, tc.count*tc.dt.Size(), m.Bytes())

			dst := make([]float32, tc.n)
			for i := range dst {
				dst[i] = float32(math.NaN()) // must be overwritten
			}
			require.NoError(t, m.LoadReduce(tc.dt, dst, tc.offset))
			for i := range dst {
				want := element(bufs[0], tc.dt, tc.offset+i)
				for _, b := range bufs[1:] {
					want += element(b, tc.dt, tc.offset+i)
				}
				if math.Float32bits(dst[i]) != math.Float32bits(want) {
					require.Failf(t, "load-reduce", "element %d: got %v want %v (device-order f32 sum)", tc.offset+i, dst[i], want)
				}
			}
		})
	}
}

// TestMulticastLoadReduceOrder checks the sum is taken in device order: the values are
// chosen so that any other order gives different bits.
func TestMulticastLoadReduceOrder(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 3, SMs: 1})
	bufs := allocAll(t, n, dtype.F32, 1)
	for d, v := range []float32{1e8, -1e8, 1} {
		bufs[d].Float32s()[0] = v
	}
	m, err := n.NewMulticast(bufs)
	require.NoError(t, err)
	dst := make([]float32, 1)
	require.NoError(t, m.LoadReduce(dtype.F32, dst, 0))
	require.Equal(t, float32(1), dst[0]) // (1e8 + -1e8) + 1; 1e8 + (-1e8 + 1) would give 0
}

func TestMulticastStore(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			n := newNode(t, device.NodeConfig{Devices: 4, SMs: 1})
			bufs := allocAll(t, n, dt, 100)
			m, err := n.NewMulticast(bufs)
			require.NoError(t, err)
			src := make([]float32, 30)
			for i := range src {
				src[i] = float32(i)*1.337 - 11
			}
			require.NoError(t, m.Store(dt, 50, src))
			for d, b := range bufs {
				for i := range 100 {
					want := float32(0)
					if i >= 50 && i < 80 {
						want = src[i-50]
						if dt != dtype.F32 {
							want = dtype.ToF32(dt, dtype.FromF32(dt, want))
						}
					}
					require.Equalf(t, want, element(b, dt, i), "device %d element %d", d, i)
				}
			}
			// A store followed by a load-reduce gives n times the stored values.
			dst := make([]float32, 30)
			require.NoError(t, m.LoadReduce(dt, dst, 50))
			for i := range dst {
				require.Equal(t, 4*element(bufs[0], dt, 50+i), dst[i])
			}
		})
	}
}

func TestMulticastRange(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1})
	m, err := n.NewMulticast(allocAll(t, n, dtype.F32, 16)) // 64 bytes: 16 f32, 32 bf16
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		dt     dtype.DType
		offset int
		count  int
		ok     bool
	}{
		{"whole f32", dtype.F32, 0, 16, true},
		{"whole bf16", dtype.BF16, 0, 32, true},
		{"tail f16", dtype.F16, 31, 1, true},
		{"empty at end", dtype.F32, 16, 0, true},
		{"negative offset", dtype.F32, -1, 2, false},
		{"past end f32", dtype.F32, 1, 16, false},
		{"offset past end", dtype.F32, 17, 0, false},
		{"past end bf16", dtype.BF16, 30, 3, false},
		{"invalid dtype", 0, 0, 1, false},
		{"dtype 9", 9, 0, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]float32, tc.count)
			errs := []error{m.LoadReduce(tc.dt, buf, tc.offset), m.Store(tc.dt, tc.offset, buf)}
			for i, err := range errs {
				op := []string{"load-reduce", "store"}[i]
				if tc.ok {
					require.NoError(t, err, op)
					continue
				}
				require.Error(t, err, op)
				require.Contains(t, err.Error(), op)
			}
		})
	}
}

// TestMulticastCounts: the object counts the elements its load-reduces return and its
// stores write, once per address however many buffers it binds; refused accesses count
// nothing.
func TestMulticastCounts(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 4, SMs: 1})
	m, err := n.NewMulticast(allocAll(t, n, dtype.F32, 100))
	require.NoError(t, err)
	require.Equal(t, device.MulticastCounts{}, m.Counts())

	require.NoError(t, m.LoadReduce(dtype.F32, make([]float32, 30), 10))
	require.NoError(t, m.LoadReduce(dtype.BF16, make([]float32, 7), 0))
	require.NoError(t, m.Store(dtype.F32, 0, make([]float32, 12)))
	require.Error(t, m.LoadReduce(dtype.F32, make([]float32, 5), 99))
	require.Error(t, m.Store(dtype.F32, 99, make([]float32, 5)))
	require.Equal(t, device.MulticastCounts{LoadReduced: 37, Stored: 12}, m.Counts())
}
