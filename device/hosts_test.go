package device_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

func TestHostsSplitDevices(t *testing.T) {
	for _, tc := range []struct {
		devices, hosts int
		want           []int // host of each device
	}{
		{4, 0, []int{0, 0, 0, 0}},
		{4, 1, []int{0, 0, 0, 0}},
		{2, 2, []int{0, 1}},
		{6, 2, []int{0, 0, 0, 1, 1, 1}},
		{8, 4, []int{0, 0, 1, 1, 2, 2, 3, 3}},
		{16, 2, []int{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}},
	} {
		n := newNode(t, device.NodeConfig{Devices: tc.devices, Hosts: tc.hosts, SMs: 1})
		hosts := make([]int, tc.devices)
		for id := range hosts {
			hosts[id] = n.HostOf(id)
		}
		require.Equal(t, tc.want, hosts, "%d devices over %d hosts", tc.devices, tc.hosts)
		require.Equal(t, max(tc.hosts, 1), n.Hosts())
		require.Equal(t, device.NVSwitch, n.Fabric())
		if tc.hosts > 1 {
			require.Equal(t, device.InfiniBand, n.InterHostFabric())
		} else {
			require.Zero(t, n.InterHostFabric())
		}
	}
}

func TestHostsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  device.NodeConfig
		want string
	}{
		{"negative hosts", device.NodeConfig{Devices: 2, Hosts: -1}, "at least one host, got -1"},
		{"uneven", device.NodeConfig{Devices: 5, Hosts: 2}, "5 devices do not split evenly over 2 hosts"},
		{"fewer devices than hosts", device.NodeConfig{Devices: 1, Hosts: 2}, "a node of 2 hosts needs 2 to 16 devices, got 1"},
		{"too many devices", device.NodeConfig{Devices: 18, Hosts: 2}, "needs 2 to 16 devices, got 18"},
		{"too many on one host", device.NodeConfig{Devices: 9}, "node needs 1 to 8 devices, got 9"},
		{"ib inside a host", device.NodeConfig{Devices: 2, Fabric: device.InfiniBand}, "fabric ib (4) connects hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := device.NewNode(tc.cfg)
			require.Nil(t, n)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestMulticastStaysOnOneHost: the switch spans a host; binding buffers of two hosts fails
// naming both, and each host binds its own.
func TestMulticastStaysOnOneHost(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 4, Hosts: 2, SMs: 1})
	bufs := allocAll(t, n, dtype.F32, 64)
	_, err := n.NewMulticast(bufs)
	require.ErrorContains(t, err, "multicast buffer 2: device 2 buffer of 64 f32 is on host 1, buffer 0 on host 0")
	for h := range 2 {
		m, err := n.NewMulticast(bufs[2*h : 2*h+2])
		require.NoError(t, err)
		require.Equal(t, 64*4, m.Bytes())
	}
}

// TestPeerAccessAcrossHosts: InfiniBand offers peer access (GPUDirect RDMA), so a buffer
// exported on one host opens on the other and shares its memory.
func TestPeerAccessAcrossHosts(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, Hosts: 2, SMs: 1})
	b, err := dev(t, n, 0).Alloc(dtype.F32, 4)
	require.NoError(t, err)
	h, err := b.Export()
	require.NoError(t, err)
	peer, err := dev(t, n, 1).OpenPeer(h)
	require.NoError(t, err)
	peer.Float32s()[3] = 7
	require.Equal(t, float32(7), b.Float32s()[3])
}
