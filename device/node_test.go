package device_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

func TestNewNodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  device.NodeConfig
		want []string
	}{
		{"no devices", device.NodeConfig{Devices: 0}, []string{"1 to 8", "got 0"}},
		{"negative devices", device.NodeConfig{Devices: -1}, []string{"got -1"}},
		{"nine devices", device.NodeConfig{Devices: 9}, []string{"1 to 8", "got 9"}},
		{"negative SMs", device.NodeConfig{Devices: 2, SMs: -1}, []string{"SMs", "-1"}},
		{"too many SMs", device.NodeConfig{Devices: 2, SMs: 1<<16 + 1}, []string{"SMs", "to 65536", "got 65537"}},
		{"negative memory", device.NodeConfig{Devices: 2, MemoryBytes: -5}, []string{"memory", "-5"}},
		{"bad fabric", device.NodeConfig{Devices: 2, Fabric: 4}, []string{"fabric", "4"}},
		{"bad fabric 255", device.NodeConfig{Devices: 2, Fabric: 255}, []string{"fabric", "255"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := device.NewNode(tc.cfg)
			require.Error(t, err)
			require.Nil(t, n)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestNewNodeDefaults(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        device.NodeConfig
		wantSMs    int
		wantFabric device.Fabric
	}{
		{"defaults", device.NodeConfig{Devices: 1}, runtime.GOMAXPROCS(0), device.NVSwitch},
		{"eight pcie", device.NodeConfig{Devices: 8, SMs: 3, Fabric: device.PCIe}, 3, device.PCIe},
		{"mesh", device.NodeConfig{Devices: 4, SMs: 1, Fabric: device.NVLinkMesh}, 1, device.NVLinkMesh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, tc.cfg)
			require.Equal(t, tc.cfg.Devices, n.NumDevices())
			require.Equal(t, tc.wantFabric, n.Fabric())
			devs := n.Devices()
			require.Len(t, devs, tc.cfg.Devices)
			for i, d := range devs {
				require.Equal(t, i, d.ID())
				require.Same(t, n, d.Node())
				require.Equal(t, tc.wantSMs, d.NumSMs())
				require.Zero(t, d.MemoryUsed())
				same, err := n.Device(i)
				require.NoError(t, err)
				require.Same(t, d, same)
			}
			// Devices returns a copy: changing it does not change the node.
			devs[0] = nil
			require.NotNil(t, n.Devices()[0])
		})
	}
}

func TestDeviceOutOfRange(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 3, SMs: 1})
	for _, id := range []int{-1, 3, 4, 100} {
		d, err := n.Device(id)
		require.Error(t, err)
		require.Nil(t, d)
		require.Contains(t, err.Error(), "no device")
		require.Contains(t, err.Error(), "node of 3")
	}
}

func TestParseFabric(t *testing.T) {
	for _, f := range []device.Fabric{device.NVSwitch, device.NVLinkMesh, device.PCIe} {
		t.Run(f.String(), func(t *testing.T) {
			got, err := device.ParseFabric(f.String())
			require.NoError(t, err)
			require.Equal(t, f, got)
			require.Equal(t, f == device.NVSwitch, f.HasMulticast())
		})
	}
	for _, tc := range []struct{ in, want string }{
		{"nvswitch", "nvswitch"},
		{"nvlink", "nvlink"},
		{"pcie", "pcie"},
	} {
		got, err := device.ParseFabric(tc.in)
		require.NoError(t, err)
		require.Equal(t, tc.want, got.String())
	}
	for _, in := range []string{"", "nvls", "nv link", "fabric(1)", "ethernet"} {
		t.Run("bad/"+in, func(t *testing.T) {
			_, err := device.ParseFabric(in)
			require.Error(t, err)
			require.Contains(t, err.Error(), "unknown fabric")
			require.Contains(t, err.Error(), `"`+in+`"`)
		})
	}
	require.Equal(t, "fabric(0)", device.Fabric(0).String())
	require.Equal(t, "fabric(9)", device.Fabric(9).String())
	require.False(t, device.Fabric(0).HasMulticast())
}
