package topo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// legend explains the matrix labels in nvidia-smi topo -m's words, nearest first.
func legend() []struct{ label, meaning string } {
	return []struct{ label, meaning string }{
		{"X", "Self"},
		{"NV#", "Connection traversing a bonded set of # NVLinks"},
		{string(PIX), "Connection traversing at most a single PCIe bridge"},
		{string(PXB), "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)"},
		{string(PHB), "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"},
		{string(NODE), "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node"},
		{string(SYS), "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"},
		{"N/A", "NVML does not tell"},
	}
}

// Render writes the topology as nvidia-smi topo -m does — the GPUs, then the matrix with
// GPU0 … GPUn columns and a legend of the labels it uses — followed by P2P status, the
// fabric, NVLS and the hw profile the GPUs map to.
func (t Topology) Render(w io.Writer) error {
	var b strings.Builder
	for _, g := range t.GPUs {
		fmt.Fprintf(&b, "GPU%d: %s, %.1f GB, %d NVLinks up\n", g.Index, g.Name, float64(g.MemoryBytes)/1e9, g.NVLinks)
	}
	b.WriteByte('\n')
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	used := map[string]bool{}
	for i := range t.GPUs {
		fmt.Fprintf(tw, "\tGPU%d", i)
	}
	fmt.Fprintln(tw)
	for i := range t.GPUs {
		fmt.Fprintf(tw, "GPU%d", i)
		for j := range t.GPUs {
			c := t.Cell(i, j)
			if strings.HasPrefix(c, "NV") {
				used["NV#"] = true
			} else {
				used[c] = true
			}
			fmt.Fprintf(tw, "\t%s", c)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nLegend:\n")
	for _, l := range legend() {
		if used[l.label] {
			fmt.Fprintf(&b, "  %-4s = %s\n", l.label, l.meaning)
		}
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "P2P:     %s\n", t.p2pSummary())
	fmt.Fprintf(&b, "Fabric:  %v (%s)\n", t.Fabric(), t.fabricWhy())
	if t.NVLS {
		b.WriteString("NVLS:    available (the switch fabric offers multicast)\n")
	} else {
		b.WriteString("NVLS:    unavailable (no multicast-capable NVSwitch fabric)\n")
	}
	fmt.Fprintf(&b, "Profile: %s\n", t.profileLine())
	fmt.Fprintf(&b, "Source:  %s\n", t.Source)
	_, err := io.WriteString(w, b.String())
	return err
}

// p2pSummary says whether every pair has peer access, else lists the pairs without it by
// status.
func (t Topology) p2pSummary() string {
	if len(t.GPUs) < 2 {
		return "no pairs"
	}
	var statuses []P2PStatus
	pairs := map[P2PStatus][]string{}
	for i := range t.Links {
		for j := i + 1; j < len(t.Links); j++ {
			s := t.Links[i][j].P2P
			if s == P2POK {
				continue
			}
			if s == "" {
				s = "unknown"
			}
			if pairs[s] == nil {
				statuses = append(statuses, s)
			}
			pairs[s] = append(pairs[s], fmt.Sprintf("GPU%d-GPU%d", i, j))
		}
	}
	if len(statuses) == 0 {
		return "OK between every pair"
	}
	parts := make([]string, len(statuses))
	for k, s := range statuses {
		parts[k] = fmt.Sprintf("%s (%s)", strings.Join(pairs[s], ", "), s)
	}
	return "not OK for " + strings.Join(parts, "; ")
}

// fabricWhy says what made the fabric what it is.
func (t Topology) fabricWhy() string {
	switch f := t.Fabric(); {
	case f == device.PCIe && len(t.GPUs) == 1:
		return "a single GPU without NVLink"
	case f == device.PCIe:
		return "not every pair of GPUs shares NVLink: peer-buffer all-reduces are PCIe-bound, so ring beyond 2 GPUs"
	case f == device.NVSwitch:
		return "NVLink through NVSwitch with multicast"
	case t.NVSwitch:
		return "NVLink through NVSwitch without multicast"
	}
	return "direct NVLink between every pair"
}

func (t Topology) profileLine() string {
	if p, ok := t.Profile(); ok {
		return fmt.Sprintf("%s (%s)", p.Name, p.GPU)
	}
	name := "no GPUs"
	if len(t.GPUs) > 0 {
		name = fmt.Sprintf("%q", t.GPUs[0].Name)
	}
	return fmt.Sprintf("none for %s (profiles: %s)", name, strings.Join(hw.Names(), ", "))
}
