//go:build linux

package device_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestSharedMulticast binds a multicast object as a rank process does: its own shareable
// buffer and a mapping of a peer's (here exported and opened in one process), its counters
// in words the caller gives, which every access bumps; a second binding over the same
// words (another process's) sees them.
func TestSharedMulticast(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1, Fabric: device.NVSwitch})
	d0, d1 := dev(t, n, 0), dev(t, n, 1)
	own, err := d0.AllocShareable(dtype.F32, 8)
	require.NoError(t, err)
	peer, err := d1.AllocShareable(dtype.F32, 8)
	require.NoError(t, err)
	h, err := peer.ExportShareable()
	require.NoError(t, err)
	mapped, err := d0.OpenPeer(h)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	for i := range 8 {
		own.Float32s()[i], peer.Float32s()[i] = float32(i), 10*float32(i)
	}
	counters := make([]uint64, 2)
	m, err := n.NewSharedMulticast([]*device.Buffer{own, mapped}, counters)
	require.NoError(t, err)
	dst := make([]float32, 4)
	require.NoError(t, m.LoadReduce(dtype.F32, dst, 2))
	require.Equal(t, []float32{22, 33, 44, 55}, dst)
	require.NoError(t, m.Store(dtype.F32, 0, []float32{7}))
	require.Equal(t, float32(7), peer.Float32s()[0], "a store reaches the peer's memory")
	other, err := n.NewSharedMulticast([]*device.Buffer{own, mapped}, counters)
	require.NoError(t, err)
	require.Equal(t, device.MulticastCounts{LoadReduced: 4, Stored: 1}, other.Counts())

	_, err = n.NewSharedMulticast([]*device.Buffer{own, own}, counters)
	require.ErrorContains(t, err, "binds a second buffer of device 0")
	_, err = n.NewSharedMulticast([]*device.Buffer{own, mapped}, nil)
	require.ErrorContains(t, err, "2 counter words, got 2 and 0")
	require.NoError(t, mapped.Free())
	require.NoError(t, own.Free())
	require.NoError(t, peer.Free())
}
