package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

func TestTopoDefault(t *testing.T) {
	out, errOut, err := runCLI(t, "topo")
	require.NoError(t, err)
	if strings.Contains(out, "Source:  nvml") {
		t.Skip("NVML answered: this machine has an NVIDIA driver")
	}
	require.Regexp(t, `^tpslice: (NVML: .*|built without cgo: NVML unavailable); using the simulated nvswitch topology of 8 GPUs\n$`, errOut)
	require.Contains(t, out, "      GPU0  GPU1  GPU2  GPU3  GPU4  GPU5  GPU6  GPU7\nGPU0  X     NV18  NV18")
	require.Contains(t, out, "Fabric:  nvswitch")
	require.Contains(t, out, "NVLS:    available")
	require.Contains(t, out, "Profile: h100-sxm")
}

func TestTopoJSON(t *testing.T) {
	out, errOut, err := runCLI(t, "topo", "--topology", "pcie", "--gpus", "4", "--json")
	require.NoError(t, err)
	require.Equal(t, "tpslice: NVML not consulted (topology chosen by name); using the simulated pcie topology of 4 GPUs\n", errOut)
	var rep struct {
		Fabric, Profile, Source, Spec, Note string
		NVLS, NVSwitch                      bool
		GPUs                                []struct{ Name string }
		Links                               [][]struct {
			NVLinks   int
			P2P, PCIe string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "pcie", rep.Fabric)
	require.Equal(t, "pcie", rep.Profile)
	require.Equal(t, "pcie", rep.Spec)
	require.False(t, rep.NVLS)
	require.False(t, rep.NVSwitch)
	require.Len(t, rep.GPUs, 4)
	require.Equal(t, "NVIDIA A100 80GB PCIe", rep.GPUs[0].Name)
	require.Equal(t, "PHB", rep.Links[0][1].PCIe)
	require.Equal(t, "OK", rep.Links[0][1].P2P)
	require.Zero(t, rep.Links[0][1].NVLinks)
	require.Contains(t, rep.Note, "simulated pcie topology of 4 GPUs")
}

func TestTopoBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--topology", "infiniband"}, `topo: unknown topology "infiniband" (fabrics: nvswitch, nvlink-mesh, pcie; hw profiles: h100-sxm`},
		{[]string{"--topology", "pcie", "--gpus", "0"}, "a simulated node has 1 to 8 GPUs, got 0"},
		{[]string{"--gpus", "9"}, "a simulated node has 1 to 8 GPUs, got 9"},
		{[]string{"stray"}, `topo: unexpected argument "stray"`},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			_, _, err := runCLI(t, append([]string{"topo"}, tc.args...)...)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestGenerateTopology: on PCIe at TP 4 every all-reduce runs ring (peer-buffer algorithms
// lose beyond 2 GPUs there); on the simulated NVSwitch node none does.
func TestGenerateTopology(t *testing.T) {
	t.Setenv("TPSLICE_ALLREDUCE_ALGO", "")
	for _, tc := range []struct {
		topology string
		ring     bool
	}{{"pcie", true}, {"nvswitch", false}} {
		t.Run(tc.topology, func(t *testing.T) {
			out, errOut, err := runCLI(t, "generate", "--model", "tiny", "--tp", "4", "--topology", tc.topology,
				"--max-tokens", "3", "--temperature", "0", "--json")
			require.NoError(t, err)
			require.Contains(t, errOut, "using the simulated "+tc.topology+" topology of 4 GPUs")
			var rep generateReport
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			reduces := 0
			for site, algo := range rep.Allreduce {
				if strings.Contains(algo, "all-gather") { // sampling gathers candidates
					continue
				}
				reduces++
				require.Equal(t, tc.ring, strings.HasPrefix(algo, "ring"), "%s: %s", site, algo)
			}
			require.Positive(t, reduces)
		})
	}

	_, _, err := runCLI(t, "generate", "--model", "tiny", "--topology", "token-ring")
	require.ErrorContains(t, err, `generate: --topology: topo: unknown topology "token-ring"`)
}

func TestServeTopologyFlag(t *testing.T) {
	cfg, _, err := parseServeFlags([]string{"--model", "tiny", "--tp", "4", "--topology", "pcie"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, device.PCIe, cfg.Fabric)
	cfg, _, err = parseServeFlags([]string{"--model", "tiny", "--topology", "a100-sxm"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, device.NVLinkMesh, cfg.Fabric)
	_, _, err = parseServeFlags([]string{"--model", "tiny", "--topology", "nope"}, io.Discard)
	require.ErrorContains(t, err, `serve: --topology: topo: unknown topology "nope"`)
}

// TestTopoPlacement: topo prints this machine's NUMA nodes and where a rank a GPU runs;
// --cpu-affinity is checked against the GPU count and the machine.
func TestTopoPlacement(t *testing.T) {
	out, _, err := runCLI(t, "topo", "--topology", "pcie", "--gpus", "2")
	require.NoError(t, err)
	require.Regexp(t, `\nNUMA nodes: \d+ \(online CPUs [-0-9,]+, allowed [-0-9,]+\)\n  node 0: CPUs `, out)
	require.Contains(t, out, "CPU placement of 2 ranks (affinity auto): ")
	require.Contains(t, out, "\n  rank 1: node ")

	out, _, err = runCLI(t, "topo", "--topology", "pcie", "--gpus", "2", "--cpu-affinity", "0|0")
	require.NoError(t, err)
	require.Contains(t, out, "CPU placement of 2 ranks (affinity 0|0): pinned\n  rank 0: node 0, CPUs 0\n  rank 1: node 0, CPUs 0\n  note: ranks 0 and 1 share CPUs 0\n")

	_, _, err = runCLI(t, "topo", "--topology", "pcie", "--gpus", "4", "--cpu-affinity", "0|0")
	require.ErrorContains(t, err, `--cpu-affinity: topo: CPU affinity "0|0": 2 CPU lists for 4 ranks`)
	_, _, err = runCLI(t, "topo", "--cpu-affinity", "0|a")
	require.ErrorContains(t, err, `invalid value "0|a" for flag -cpu-affinity: rank 1: CPU list "a"`)
}
