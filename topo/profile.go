package topo

import (
	"strings"

	"github.com/tpslice/tpslice/hw"
)

// nameRule maps the GPU names NVML reports to a hw profile: every word in has must appear
// in the upper-cased name and none in hasNot.
type nameRule struct {
	has, hasNot []string
	profile     string
	// nvmlName is the name NVML reports for the profile's GPU; Simulated uses it, so that
	// a simulated topology maps back to its profile.
	nvmlName string
}

// nameRules lists the GPUs with a profile. Names that match none (H100 PCIe, A100 40GB, …)
// have no profile rather than a wrong one: their bandwidths differ from every profile's.
func nameRules() []nameRule {
	return []nameRule{
		// H100 SXM reports "NVIDIA H100 80GB HBM3"; the PCIe and NVL cards are other GPUs.
		{has: []string{"H100"}, hasNot: []string{"PCIE", "NVL"}, profile: "h100-sxm", nvmlName: "NVIDIA H100 80GB HBM3"},
		{has: []string{"H200"}, hasNot: []string{"NVL"}, profile: "h200", nvmlName: "NVIDIA H200"},
		{has: []string{"A100", "SXM", "80GB"}, profile: "a100-sxm", nvmlName: "NVIDIA A100-SXM4-80GB"},
		{has: []string{"B200"}, profile: "b200", nvmlName: "NVIDIA B200"},
		{has: []string{"L40S"}, profile: "l40s-pcie", nvmlName: "NVIDIA L40S"},
		// hw's generic "pcie" profile carries A100 80GB PCIe's figures.
		{has: []string{"A100", "PCIE", "80GB"}, profile: "pcie", nvmlName: "NVIDIA A100 80GB PCIe"},
	}
}

func (r nameRule) matches(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range r.has {
		if !strings.Contains(up, w) {
			return false
		}
	}
	for _, w := range r.hasNot {
		if strings.Contains(up, w) {
			return false
		}
	}
	return true
}

// ProfileFor returns the hw profile of the GPU NVML names name ("NVIDIA H100 80GB HBM3" is
// h100-sxm), or false when no profile describes that GPU.
func ProfileFor(name string) (hw.Profile, bool) {
	for _, r := range nameRules() {
		if r.matches(name) {
			p, err := hw.Lookup(r.profile)
			return p, err == nil
		}
	}
	return hw.Profile{}, false
}

// Profile returns the hw profile of the node's GPUs, or false when there are none, they
// differ, or no profile describes them.
func (t Topology) Profile() (hw.Profile, bool) {
	if len(t.GPUs) == 0 {
		return hw.Profile{}, false
	}
	for _, g := range t.GPUs[1:] {
		if g.Name != t.GPUs[0].Name {
			return hw.Profile{}, false
		}
	}
	return ProfileFor(t.GPUs[0].Name)
}

// nvmlName is the name NVML reports for profile p's GPU, or p's own description where the
// rules hold none.
func nvmlName(p hw.Profile) string {
	for _, r := range nameRules() {
		if r.profile == p.Name {
			return r.nvmlName
		}
	}
	return p.GPU
}
