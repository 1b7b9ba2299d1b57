package topo_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/topo"
)

func TestSimulatedFabrics(t *testing.T) {
	cases := []struct {
		spec, canonical string
		fabric          device.Fabric
		nvswitch        bool
		cell            string
		nvlinksPerGPU   int
		profile         string
	}{
		{"nvswitch", "nvswitch", device.NVSwitch, true, "NV18", 18, "h100-sxm"},
		{"nvlink-mesh", "nvlink-mesh", device.NVLinkMesh, false, "NV4", 12, "a100-sxm"},
		{"nvlink", "nvlink-mesh", device.NVLinkMesh, false, "NV4", 12, "a100-sxm"},
		{"a100-sxm", "a100-sxm", device.NVLinkMesh, true, "NV12", 12, "a100-sxm"},
		{" PCIe ", "pcie", device.PCIe, false, "PHB", 0, "pcie"},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			tp, err := topo.Simulated(tc.spec, 4)
			require.NoError(t, err)
			require.Equal(t, tc.canonical, tp.Spec)
			require.Equal(t, tc.fabric, tp.Fabric())
			require.Equal(t, tc.fabric.HasMulticast(), tp.NVLS)
			require.Equal(t, tc.cell, tp.Cell(0, 3))
			require.Equal(t, tc.nvswitch, tp.NVSwitch)
			require.Equal(t, tc.nvlinksPerGPU, tp.GPUs[3].NVLinks)
			p, ok := tp.Profile()
			require.True(t, ok)
			require.Equal(t, tc.profile, p.Name)
			require.True(t, strings.HasPrefix(tp.Source, "simulated: "), tp.Source)
		})
	}
}

// TestSimulatedProfiles: every hw profile simulates a node with the profile's fabric whose
// GPU names map back to the profile.
func TestSimulatedProfiles(t *testing.T) {
	for _, want := range hw.Profiles() {
		t.Run(want.Name, func(t *testing.T) {
			tp, err := topo.Simulated(want.Name, 8)
			require.NoError(t, err)
			require.Len(t, tp.GPUs, 8)
			require.Equal(t, want.Fabric, tp.Fabric())
			require.Equal(t, want.NVLS, tp.NVLS)
			got, ok := tp.Profile()
			require.True(t, ok, "GPU name %q", tp.GPUs[0].Name)
			require.Equal(t, want, got)
		})
	}
	tp, err := topo.Simulated("a100-sxm-80g", 2)
	require.NoError(t, err)
	require.Equal(t, "a100-sxm", tp.Spec, "aliases resolve to the canonical name")
}

func TestSimulatedMeshSizes(t *testing.T) {
	for n, want := range map[int]string{2: "NV12", 3: "NV6", 8: "NV1"} {
		tp, err := topo.Simulated("nvlink-mesh", n)
		require.NoError(t, err)
		require.Equal(t, want, tp.Cell(n-1, 0), "%d GPUs", n)
		require.Equal(t, device.NVLinkMesh, tp.Fabric())
	}
}

func TestSimulatedPCIeSockets(t *testing.T) {
	tp, err := topo.Simulated("pcie", 8)
	require.NoError(t, err)
	require.Equal(t, "PHB", tp.Cell(0, 3))
	require.Equal(t, "SYS", tp.Cell(3, 4))
	require.Equal(t, topo.P2POK, tp.Links[4][7].P2P)
	require.NotEqual(t, topo.P2POK, tp.Links[0][7].P2P)
}

func TestSimulatedBadInput(t *testing.T) {
	cases := []struct {
		spec string
		n    int
		want string
	}{
		{"infiniband", 8, `topo: unknown topology "infiniband" (fabrics: nvswitch, nvlink-mesh, pcie; hw profiles: h100-sxm, h200, a100-sxm, b200, l40s-pcie, pcie)`},
		{"", 8, `topo: unknown topology ""`},
		{"nvswitch", 0, "topo: a simulated node has 1 to 8 GPUs, got 0"},
		{"nvswitch", 9, "topo: a simulated node has 1 to 8 GPUs, got 9"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			_, err := topo.Simulated(tc.spec, tc.n)
			require.ErrorContains(t, err, tc.want)
			_, err = topo.Detect(tc.spec, tc.n)
			if tc.spec != "" {
				require.ErrorContains(t, err, tc.want, "Detect rejects what Simulated does")
			}
		})
	}
}

func TestProfileFor(t *testing.T) {
	cases := []struct{ name, profile string }{
		{"NVIDIA H100 80GB HBM3", "h100-sxm"},
		{"NVIDIA H200", "h200"},
		{"NVIDIA H200 141GB HBM3e", "h200"},
		{"NVIDIA A100-SXM4-80GB", "a100-sxm"},
		{"NVIDIA A100 80GB PCIe", "pcie"},
		{"NVIDIA A100-PCIE-80GB", "pcie"},
		{"NVIDIA B200", "b200"},
		{"NVIDIA B200 180GB HBM3e", "b200"},
		{"NVIDIA L40S", "l40s-pcie"},
		{"NVIDIA H100 PCIe", ""},
		{"NVIDIA H100 NVL", ""},
		{"NVIDIA A100-SXM4-40GB", ""},
		{"Tesla V100-SXM2-32GB", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := topo.ProfileFor(tc.name)
			require.Equal(t, tc.profile != "", ok)
			require.Equal(t, tc.profile, p.Name)
		})
	}
}

func TestProfileMixedGPUs(t *testing.T) {
	tp, err := topo.Simulated("h100-sxm", 2)
	require.NoError(t, err)
	tp.GPUs[1].Name = "NVIDIA H200"
	_, ok := tp.Profile()
	require.False(t, ok, "GPUs of two kinds have no one profile")
	_, ok = topo.Topology{}.Profile()
	require.False(t, ok)
}

func TestFabricOfOneGPU(t *testing.T) {
	for spec, want := range map[string]device.Fabric{"nvswitch": device.NVSwitch, "nvlink-mesh": device.NVLinkMesh, "pcie": device.PCIe} {
		tp, err := topo.Simulated(spec, 1)
		require.NoError(t, err)
		require.Equal(t, want, tp.Fabric(), spec)
	}
}

func TestRender(t *testing.T) {
	tp, err := topo.Simulated("nvswitch", 4)
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, tp.Render(&b))
	want := `GPU0: NVIDIA H100 80GB HBM3, 80.0 GB, 18 NVLinks up
GPU1: NVIDIA H100 80GB HBM3, 80.0 GB, 18 NVLinks up
GPU2: NVIDIA H100 80GB HBM3, 80.0 GB, 18 NVLinks up
GPU3: NVIDIA H100 80GB HBM3, 80.0 GB, 18 NVLinks up

      GPU0  GPU1  GPU2  GPU3
GPU0  X     NV18  NV18  NV18
GPU1  NV18  X     NV18  NV18
GPU2  NV18  NV18  X     NV18
GPU3  NV18  NV18  NV18  X

Legend:
  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks

P2P:     OK between every pair
Fabric:  nvswitch (NVLink through NVSwitch with multicast)
NVLS:    available (the switch fabric offers multicast)
Profile: h100-sxm (NVIDIA H100 SXM5 80GB)
Source:  simulated: NVML not consulted (topology chosen by name)
`
	require.Equal(t, want, b.String())

	tp, err = topo.Simulated("pcie", 8)
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, tp.Render(&b))
	require.Contains(t, b.String(), "GPU3  PHB   PHB   PHB   X     SYS   SYS   SYS   SYS")
	require.Contains(t, b.String(), "P2P:     not OK for GPU0-GPU4, ")
	require.Contains(t, b.String(), "(IOH topology not supported)")
	require.Contains(t, b.String(), "Fabric:  pcie (not every pair of GPUs shares NVLink")
}

func TestDetect(t *testing.T) {
	tp, err := topo.Detect("pcie", 4)
	require.NoError(t, err)
	require.Equal(t, device.PCIe, tp.Fabric())
	require.Equal(t, "NVML not consulted (topology chosen by name); using the simulated pcie topology of 4 GPUs", tp.Note())

	for _, spec := range []string{"", topo.Auto} {
		tp, err = topo.Detect(spec, 1)
		require.NoError(t, err)
		if tp.Source == "nvml" {
			t.Skip("NVML answered: this machine has an NVIDIA driver")
		}
		require.Equal(t, "nvswitch", tp.Spec)
		require.Len(t, tp.GPUs, 1)
		require.Equal(t, device.NVSwitch, tp.Fabric())
		require.Contains(t, tp.Note(), "; using the simulated nvswitch topology of 1 GPU")
		require.True(t, strings.HasPrefix(tp.Note(), "NVML") || strings.HasPrefix(tp.Note(), "built without cgo"), tp.Note())
	}
}
