//go:build cgo

package topo_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/topo"
)

// fakeNode describes a node for the NVML mock.
type fakeNode struct {
	gpus        int
	name        string
	memBytes    uint64
	switchLinks int // NVLinks per GPU to NVSwitches
	// directLinks NVLinks join GPU i to every GPU peersOf(i) returns.
	directLinks int
	peersOf     func(i, n int) []int
	onFabric    bool // fabric manager registration done; false: GetGpuFabricInfo unsupported
	path        nvml.GpuTopologyLevel
	pathRet     nvml.Return // ERROR_NOT_SUPPORTED: NVML does not tell the PCIe path
	p2p         nvml.GpuP2PStatus
	p2pRet      nvml.Return
	noSymbols   bool // the library lacks the newer calls (remote device type, fabric info)
	// failGPU's call failCall returns failRet.
	failGPU  int
	failCall string
	failRet  nvml.Return
}

func allPeers(i, n int) []int {
	var ps []int
	for j := range n {
		if j != i {
			ps = append(ps, j)
		}
	}
	return ps
}

// build returns the mock library and its devices. Every function the reader may call is
// set; any other call panics (moq's nil functions do), which fails the test.
func (f fakeNode) build() (*mock.Interface, []*mock.Device) {
	devs := make([]*mock.Device, f.gpus)
	index := map[nvml.Device]int{}
	for i := range devs {
		devs[i] = f.device(i, index)
		index[devs[i]] = i
	}
	lib := &mock.Interface{
		InitFunc:     func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc: func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) {
			if f.failCall == "DeviceGetCount" {
				return 0, f.failRet
			}
			return f.gpus, nvml.SUCCESS
		},
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if ret := f.ret(i, "DeviceGetHandleByIndex"); ret != nvml.SUCCESS {
				return nil, ret
			}
			return devs[i], nvml.SUCCESS
		},
		ExtensionsFunc: func() nvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(sym string) error {
				if f.noSymbols {
					return fmt.Errorf("%s: undefined symbol", sym)
				}
				return nil
			}}
		},
	}
	return lib, devs
}

func (f fakeNode) ret(gpu int, call string) nvml.Return {
	if f.failCall == call && f.failGPU == gpu {
		return f.failRet
	}
	return nvml.SUCCESS
}

// pci is GPU i's PCIe address; the switches sit on bus 0x80.
func pci(i int) nvml.PciInfo { return nvml.PciInfo{Domain: 0, Bus: uint32(0x10 + i), Device: 0} }

func (f fakeNode) device(i int, index map[nvml.Device]int) *mock.Device {
	var peers []int // the far end of each direct link, in link order
	if f.peersOf != nil {
		for _, p := range f.peersOf(i, f.gpus) {
			for range f.directLinks {
				peers = append(peers, p)
			}
		}
	}
	isSwitch := func(l int) bool { return l >= len(peers) }
	return &mock.Device{
		GetNameFunc: func() (string, nvml.Return) { return f.name, f.ret(i, "GetName") },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: f.memBytes}, f.ret(i, "GetMemoryInfo")
		},
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return pci(i), f.ret(i, "GetPciInfo") },
		GetNvLinkStateFunc: func(l int) (nvml.EnableState, nvml.Return) {
			if ret := f.ret(i, "GetNvLinkState"); ret != nvml.SUCCESS {
				return 0, ret
			}
			switch {
			case len(peers)+f.switchLinks == 0:
				return 0, nvml.ERROR_NOT_SUPPORTED
			case l >= len(peers)+f.switchLinks:
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		},
		GetNvLinkRemoteDeviceTypeFunc: func(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
			if isSwitch(l) {
				return nvml.NVLINK_DEVICE_TYPE_SWITCH, f.ret(i, "GetNvLinkRemoteDeviceType")
			}
			return nvml.NVLINK_DEVICE_TYPE_GPU, f.ret(i, "GetNvLinkRemoteDeviceType")
		},
		GetNvLinkRemotePciInfoFunc: func(l int) (nvml.PciInfo, nvml.Return) {
			if isSwitch(l) {
				return nvml.PciInfo{Bus: 0x80}, f.ret(i, "GetNvLinkRemotePciInfo")
			}
			return pci(peers[l]), f.ret(i, "GetNvLinkRemotePciInfo")
		},
		GetGpuFabricInfoFunc: func() (nvml.GpuFabricInfo, nvml.Return) {
			if ret := f.ret(i, "GetGpuFabricInfo"); ret != nvml.SUCCESS {
				return nvml.GpuFabricInfo{}, ret
			}
			if !f.onFabric {
				return nvml.GpuFabricInfo{}, nvml.ERROR_NOT_SUPPORTED
			}
			return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.SUCCESS)}, nvml.SUCCESS
		},
		GetP2PStatusFunc: func(peer nvml.Device, caps nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			if _, ok := index[peer]; !ok || caps != nvml.P2P_CAPS_INDEX_READ {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			if ret := f.ret(i, "GetP2PStatus"); ret != nvml.SUCCESS {
				return 0, ret
			}
			return f.p2p, f.p2pRet
		},
		GetTopologyCommonAncestorFunc: func(peer nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			if _, ok := index[peer]; !ok {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			if ret := f.ret(i, "GetTopologyCommonAncestor"); ret != nvml.SUCCESS {
				return 0, ret
			}
			return f.path, f.pathRet
		},
	}
}

// hgxH100 is an 8-GPU HGX H100: 18 NVLinks per GPU to the NVSwitches, registered with
// the fabric manager (NVLS), P2P OK. nvidia-smi reports 81559 MiB per GPU.
func hgxH100() fakeNode {
	return fakeNode{gpus: 8, name: "NVIDIA H100 80GB HBM3", memBytes: 81559 << 20, switchLinks: 18, onFabric: true,
		path: nvml.TOPOLOGY_NODE, p2p: nvml.P2P_STATUS_OK, failGPU: -1}
}

// pcieL40S is 4 L40S on one socket's PCIe: no NVLink, P2P through the host bridge.
func pcieL40S() fakeNode {
	return fakeNode{gpus: 4, name: "NVIDIA L40S", memBytes: 46068 << 20, path: nvml.TOPOLOGY_HOSTBRIDGE,
		p2p: nvml.P2P_STATUS_OK, failGPU: -1}
}

func TestFromNVML(t *testing.T) {
	hgxA100 := fakeNode{gpus: 8, name: "NVIDIA A100-SXM4-80GB", memBytes: 81920 << 20, switchLinks: 12,
		path: nvml.TOPOLOGY_SYSTEM, p2p: nvml.P2P_STATUS_OK, failGPU: -1}
	mesh := fakeNode{gpus: 4, name: "NVIDIA A100-SXM4-80GB", memBytes: 81920 << 20, directLinks: 4, peersOf: allPeers,
		path: nvml.TOPOLOGY_MULTIPLE, p2p: nvml.P2P_STATUS_OK, failGPU: -1}
	meshOldDriver := mesh
	meshOldDriver.noSymbols = true
	bridged := pcieL40S() // NVLink bridges join 0-1 and 2-3 only
	bridged.name, bridged.directLinks = "NVIDIA RTX A6000", 4
	bridged.peersOf = func(i, _ int) []int { return []int{i ^ 1} }
	unknownPaths := pcieL40S()
	unknownPaths.pathRet, unknownPaths.p2pRet = nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_NOT_SUPPORTED

	cases := []struct {
		name             string
		node             fakeNode
		fabric           device.Fabric
		nvswitch, nvls   bool
		cell01, cell02   string
		profile          string // "" means none
		nvlinksPerGPU    int
		p2p01            topo.P2PStatus
		renderedSnippets []string
	}{
		{"HGX H100", hgxH100(), device.NVSwitch, true, true, "NV18", "NV18", "h100-sxm", 18, topo.P2POK,
			[]string{"GPU0  X     NV18", "Fabric:  nvswitch", "NVLS:    available", "Profile: h100-sxm", "Source:  nvml"}},
		{"4 L40S on PCIe", pcieL40S(), device.PCIe, false, false, "PHB", "PHB", "l40s-pcie", 0, topo.P2POK,
			[]string{"GPU0  X     PHB   PHB   PHB", "PHB  = Connection traversing PCIe as well as a PCIe Host Bridge", "Fabric:  pcie", "NVLS:    unavailable"}},
		{"HGX A100 (switch without multicast)", hgxA100, device.NVLinkMesh, true, false, "NV12", "NV12", "a100-sxm", 12, topo.P2POK,
			[]string{"Fabric:  nvlink (NVLink through NVSwitch without multicast)"}},
		{"direct NVLink mesh", mesh, device.NVLinkMesh, false, false, "NV4", "NV4", "a100-sxm", 12, topo.P2POK,
			[]string{"Fabric:  nvlink (direct NVLink between every pair)"}},
		{"direct mesh, driver without the newer calls", meshOldDriver, device.NVLinkMesh, false, false, "NV4", "NV4", "a100-sxm", 12, topo.P2POK, nil},
		{"NVLink bridges in pairs", bridged, device.PCIe, false, false, "NV4", "PHB", "", 4, topo.P2POK,
			[]string{`Profile: none for "NVIDIA RTX A6000"`}},
		{"PCIe path and P2P not supported", unknownPaths, device.PCIe, false, false, "N/A", "N/A", "l40s-pcie", 0, "not supported",
			[]string{"N/A  = NVML does not tell", "P2P:     not OK for GPU0-GPU1, GPU0-GPU2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lib, _ := tc.node.build()
			tp, err := topo.FromNVML(lib)
			require.NoError(t, err)
			require.Len(t, lib.ShutdownCalls(), 1, "Shutdown after a successful Init")
			require.Equal(t, "nvml", tp.Source)
			require.Empty(t, tp.Note())
			require.Len(t, tp.GPUs, tc.node.gpus)
			for i, g := range tp.GPUs {
				require.Equal(t, topo.GPU{Index: i, Name: tc.node.name, MemoryBytes: tc.node.memBytes, NVLinks: tc.nvlinksPerGPU}, g)
			}
			require.Equal(t, tc.fabric, tp.Fabric())
			require.Equal(t, tc.nvswitch, tp.NVSwitch)
			require.Equal(t, tc.nvls, tp.NVLS)
			require.Equal(t, tc.cell01, tp.Cell(0, 1))
			require.Equal(t, tc.cell01, tp.Cell(1, 0))
			require.Equal(t, tc.cell02, tp.Cell(0, 2))
			require.Equal(t, "X", tp.Cell(2, 2))
			require.Equal(t, tc.p2p01, tp.Links[0][1].P2P)
			p, ok := tp.Profile()
			require.Equal(t, tc.profile != "", ok)
			require.Equal(t, tc.profile, p.Name)
			var out strings.Builder
			require.NoError(t, tp.Render(&out))
			for _, s := range tc.renderedSnippets {
				require.Contains(t, out.String(), s)
			}
		})
	}
}

// TestFromNVMLPCIePicksRing: on 4 GPUs joined by PCIe only, the comm selector runs ring at
// every size and offers no NVLS, where the H100 node runs peer-buffer algorithms.
func TestFromNVMLPCIePicksRing(t *testing.T) {
	t.Setenv(comm.EnvAlgo, "")
	lib, _ := pcieL40S().build()
	tp, err := topo.FromNVML(lib)
	require.NoError(t, err)
	f := tp.Fabric()
	require.Equal(t, device.PCIe, f)
	require.False(t, f.HasMulticast())
	require.False(t, tp.NVLS)
	for _, size := range []int{16 << 10, 1 << 20, 64 << 20} {
		require.Equal(t, comm.Ring, comm.DefaultRule(4, size, f), "%d bytes", size)
		require.NotEqual(t, comm.Ring, comm.DefaultRule(4, size, device.NVSwitch), "%d bytes on NVSwitch", size)
	}

	node, err := device.NewNode(device.NodeConfig{Devices: 4, SMs: 2, Fabric: f})
	require.NoError(t, err)
	defer node.Close()
	c, err := comm.New(node, comm.Config{BufferBytes: 64 << 10, LamportBytes: 4 << 10})
	require.NoError(t, err)
	defer c.Close()
	require.False(t, c.HasNVLS())
	require.Equal(t, comm.Ring, c.Pick(16<<10).Algo)
}

// TestFromNVMLInitFails: when Init fails no other NVML call may follow (with no library
// loaded, go-nvml would call through a missing symbol and kill the process). The mock has
// only InitFunc set: any other call panics.
func TestFromNVMLInitFails(t *testing.T) {
	cases := []struct {
		ret  nvml.Return
		want string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, "NVML: library not found (no NVIDIA driver)"},
		{nvml.ERROR_DRIVER_NOT_LOADED, "NVML: the NVIDIA driver is not loaded"},
		{nvml.ERROR_UNKNOWN, "NVML: Init failed with return code 999"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			lib := &mock.Interface{InitFunc: func() nvml.Return { return tc.ret }}
			var err error
			require.NotPanics(t, func() { _, err = topo.FromNVML(lib) }, "an NVML call after the failed Init")
			require.EqualError(t, err, tc.want)
			require.True(t, errors.Is(err, tc.ret))
			require.Len(t, lib.InitCalls(), 1)
			require.Empty(t, lib.ShutdownCalls())
			require.Empty(t, lib.DeviceGetCountCalls())
			require.Empty(t, lib.ExtensionsCalls())
			require.Empty(t, lib.ErrorStringCalls())
		})
	}
}

// TestFromNVMLCallErrors: a failing call is an error naming the GPU and the call, and
// Shutdown still follows the successful Init.
func TestFromNVMLCallErrors(t *testing.T) {
	lost := nvml.ERROR_GPU_IS_LOST
	cases := []struct {
		node fakeNode
		gpu  int
		call string
		want string
	}{
		{hgxH100(), 0, "DeviceGetCount", "NVML: DeviceGetCount: ERROR_GPU_IS_LOST"},
		{hgxH100(), 3, "DeviceGetHandleByIndex", "NVML: GPU 3: DeviceGetHandleByIndex: ERROR_GPU_IS_LOST"},
		{hgxH100(), 2, "GetName", "NVML: GPU 2: GetName: ERROR_GPU_IS_LOST"},
		{hgxH100(), 7, "GetMemoryInfo", "NVML: GPU 7: GetMemoryInfo: ERROR_GPU_IS_LOST"},
		{hgxH100(), 1, "GetPciInfo", "NVML: GPU 1: GetPciInfo: ERROR_GPU_IS_LOST"},
		{hgxH100(), 5, "GetNvLinkState", "NVML: GPU 5: GetNvLinkState(link 0): ERROR_GPU_IS_LOST"},
		{hgxH100(), 4, "GetNvLinkRemoteDeviceType", "NVML: GPU 4: GetNvLinkRemoteDeviceType(link 0): ERROR_GPU_IS_LOST"},
		{hgxH100(), 6, "GetGpuFabricInfo", "NVML: GPU 6: GetGpuFabricInfo: ERROR_GPU_IS_LOST"},
		{pcieL40S(), 1, "GetP2PStatus", "NVML: GPU 1: GetP2PStatus(GPU 0): ERROR_GPU_IS_LOST"},
		{pcieL40S(), 2, "GetTopologyCommonAncestor", "NVML: GPU 2: GetTopologyCommonAncestor(GPU 0): ERROR_GPU_IS_LOST"},
	}
	mesh := pcieL40S()
	mesh.directLinks, mesh.peersOf = 2, allPeers
	cases = append(cases, struct {
		node fakeNode
		gpu  int
		call string
		want string
	}{mesh, 3, "GetNvLinkRemotePciInfo", "NVML: GPU 3: GetNvLinkRemotePciInfo(link 0): ERROR_GPU_IS_LOST"})
	for _, tc := range cases {
		t.Run(tc.call, func(t *testing.T) {
			tc.node.failGPU, tc.node.failCall, tc.node.failRet = tc.gpu, tc.call, lost
			lib, _ := tc.node.build()
			_, err := topo.FromNVML(lib)
			require.EqualError(t, err, tc.want)
			require.True(t, errors.Is(err, lost))
			require.Len(t, lib.ShutdownCalls(), 1)
		})
	}

	t.Run("no GPUs", func(t *testing.T) {
		node := hgxH100()
		node.gpus = 0
		lib, _ := node.build()
		_, err := topo.FromNVML(lib)
		require.EqualError(t, err, "NVML: the driver reports no GPUs")
		require.Len(t, lib.ShutdownCalls(), 1)
	})
}
