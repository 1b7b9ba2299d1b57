package topo

import (
	"fmt"
	"strings"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// fabricSpec is a fabric name Simulated accepts: the profile whose GPUs it simulates, and
// whether their NVLinks go to switches or straight to the peers.
type fabricSpec struct {
	name, profile string
	direct        bool
}

// fabricSpecs lists the fabric names; "nvlink" is how device.ParseFabric spells
// nvlink-mesh.
func fabricSpecs() []fabricSpec {
	return []fabricSpec{
		{name: "nvswitch", profile: "h100-sxm"}, // HGX H100: NVSwitch gen 3 with NVLS
		// A100s with direct links, as the 4-GPU HGX A100 board joins them (4 per pair).
		{name: "nvlink-mesh", profile: "a100-sxm", direct: true},
		{name: "nvlink", profile: "a100-sxm", direct: true},
		{name: "pcie", profile: "pcie"},
	}
}

// NVLinks per GPU in the simulated nodes: 18 on H100/H200/B200 (NVLink 4 and 5), 12 on
// A100 (NVLink 3), from NVIDIA's architecture whitepapers.
func simulatedLinks(p hw.Profile) int {
	switch {
	case p.Fabric == device.PCIe:
		return 0
	case strings.HasPrefix(p.Name, "a100"):
		return 12
	}
	return 18
}

// Simulated returns the topology of n GPUs named by spec: a fabric (nvswitch, nvlink-mesh,
// pcie) or a hw profile name or alias (h100-sxm, a100-sxm-80g, l40s, …). A profile's
// NVLink node is switched, as HGX boards are: every pair shows all of a GPU's links (the
// a100-sxm switch has no multicast). nvlink-mesh splits an A100's 12 links evenly over
// direct links to its peers. PCIe nodes hold four GPUs per CPU socket, as 8-GPU PCIe
// servers do: pairs on one socket meet at the host bridge (PHB) with P2P, pairs across
// sockets cross the CPU interconnect (SYS) without it.
func Simulated(spec string, n int) (Topology, error) {
	if err := checkGPUs(n); err != nil {
		return Topology{}, err
	}
	f, p, err := lookupSpec(spec)
	if err != nil {
		return Topology{}, err
	}
	links := simulatedLinks(p)
	perPair := links // through a switch every pair sees all of a GPU's links
	if f.direct && n > 1 {
		perPair = max(1, links/(n-1))
		links = perPair * (n - 1)
	}
	t := Topology{
		NVSwitch: links > 0 && !f.direct,
		NVLS:     p.NVLS && !f.direct,
		Source:   "simulated: NVML not consulted (topology chosen by name)",
		Spec:     f.name,
		Links:    make([][]Link, n),
	}
	for i := range n {
		t.GPUs = append(t.GPUs, GPU{Index: i, Name: nvmlName(p), MemoryBytes: uint64(p.MemoryBytes), NVLinks: links})
		t.Links[i] = make([]Link, n)
		for j := range n {
			switch {
			case i == j:
			case links > 0:
				t.Links[i][j] = Link{NVLinks: perPair, P2P: P2POK} // the PCIe path behind NVLink is not simulated
			case i/gpusPerSocket == j/gpusPerSocket:
				t.Links[i][j] = Link{P2P: P2POK, PCIe: PHB}
			default:
				t.Links[i][j] = Link{P2P: "IOH topology not supported", PCIe: SYS}
			}
		}
	}
	return t, nil
}

// lookupSpec resolves a simulated topology's name: a fabric (with its canonical name) or a
// profile (named by its canonical name, switched where it has NVLink).
func lookupSpec(spec string) (fabricSpec, hw.Profile, error) {
	key := strings.ToLower(strings.TrimSpace(spec))
	for _, f := range fabricSpecs() {
		if f.name == key {
			if key == "nvlink" {
				f.name = "nvlink-mesh"
			}
			p, err := hw.Lookup(f.profile)
			return f, p, err
		}
	}
	if p, err := hw.Lookup(key); err == nil {
		return fabricSpec{name: p.Name, profile: p.Name}, p, nil
	}
	return fabricSpec{}, hw.Profile{}, fmt.Errorf("topo: unknown topology %q (fabrics: %s; hw profiles: %s)",
		spec, strings.Join(Fabrics(), ", "), strings.Join(hw.Names(), ", "))
}

// Fabrics returns the fabric names Simulated accepts besides hw profile names.
func Fabrics() []string { return []string{"nvswitch", "nvlink-mesh", "pcie"} }

// gpusPerSocket is how many GPUs of a simulated PCIe node share a CPU socket.
const gpusPerSocket = 4

// checkGPUs rejects a simulated node the device runtime could not build.
func checkGPUs(n int) error {
	if n < 1 || n > device.MaxDevices {
		return fmt.Errorf("topo: a simulated node has 1 to %d GPUs, got %d", device.MaxDevices, n)
	}
	return nil
}
