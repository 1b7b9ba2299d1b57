package topo

import (
	"fmt"
	"strings"

	"github.com/tpslice/tpslice/device"
)

// Topology is the GPUs of one node and how every pair of them is connected.
type Topology struct {
	// GPUs in NVML index order.
	GPUs []GPU `json:"gpus"`
	// Links[i][j] is how GPU i reaches GPU j; the diagonal is the zero Link.
	Links [][]Link `json:"links"`
	// NVSwitch reports that the GPUs' NVLinks go to NVSwitches rather than to each other.
	NVSwitch bool `json:"nvswitch"`
	// NVLS reports that the switch fabric offers multicast objects (NVLink SHARP): every
	// GPU is registered with the fabric manager, which NVML reports only from Hopper on.
	NVLS bool `json:"nvls"`
	// Source is "nvml", or "simulated: " and why.
	Source string `json:"source"`
	// Spec names the simulated topology (a fabric or hw profile name); empty from NVML.
	Spec string `json:"spec,omitempty"`
}

// GPU is one GPU as NVML names it.
type GPU struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	MemoryBytes uint64 `json:"memory_bytes"`
	// NVLinks is the number of NVLinks that are up, to peers or to switches.
	NVLinks int `json:"nvlinks"`
}

// Link is the connection from one GPU to another.
type Link struct {
	// NVLinks is the number of bonded NVLinks between the pair, direct or through a switch
	// (nvidia-smi's NV#); 0 means the pair talks over PCIe.
	NVLinks int `json:"nvlinks"`
	// P2P is NVML's peer-to-peer read status for the pair.
	P2P P2PStatus `json:"p2p,omitempty"`
	// PCIe is the PCIe path between the pair; empty where NVML does not tell.
	PCIe PathKind `json:"pcie,omitempty"`
}

// P2PStatus is whether one GPU can read another's memory directly, in NVML's words.
type P2PStatus string

// P2POK is the status of a pair with working peer access.
const P2POK P2PStatus = "OK"

// PathKind is the PCIe path between two GPUs, as nvidia-smi topo -m labels it.
type PathKind string

// The PCIe path kinds, nearest first (nvidia-smi's legend).
const (
	PIX  PathKind = "PIX"  // at most one PCIe bridge
	PXB  PathKind = "PXB"  // several PCIe bridges, no host bridge
	PHB  PathKind = "PHB"  // a PCIe host bridge (typically the CPU)
	NODE PathKind = "NODE" // between host bridges within a NUMA node
	SYS  PathKind = "SYS"  // across NUMA nodes (QPI/UPI, Infinity Fabric)
)

// Fabric classifies the node as the device runtime and the all-reduce selector see it, by
// what it offers rather than by its parts: NVSwitch when NVLink joins every pair and the
// switch offers multicast (NVLS); NVLinkMesh when NVLink joins every pair without multicast
// (direct links, or a switch without NVLS such as HGX A100's, as hw's a100-sxm profile
// says); PCIe when some pair (or a lone GPU) has no NVLink, since peer-buffer algorithms
// would then be bound by PCIe.
func (t Topology) Fabric() device.Fabric {
	if len(t.GPUs) == 1 && t.GPUs[0].NVLinks == 0 {
		return device.PCIe
	}
	for i := range t.Links {
		for j, l := range t.Links[i] {
			if i != j && l.NVLinks == 0 {
				return device.PCIe
			}
		}
	}
	if t.NVLS {
		return device.NVSwitch
	}
	return device.NVLinkMesh
}

// Cell is the matrix entry for GPUs i and j as nvidia-smi topo -m prints it: X on the
// diagonal, NV# for # bonded NVLinks, else the PCIe path kind (N/A where unknown).
func (t Topology) Cell(i, j int) string {
	switch l := t.Links[i][j]; {
	case i == j:
		return "X"
	case l.NVLinks > 0:
		return fmt.Sprintf("NV%d", l.NVLinks)
	case l.PCIe != "":
		return string(l.PCIe)
	}
	return "N/A"
}

// Note is the one line a command prints about where a simulated topology came from, e.g.
// "NVML: library not found (no NVIDIA driver); using the simulated nvswitch topology of 8
// GPUs"; it is empty for a topology read from NVML.
func (t Topology) Note() string {
	why, ok := strings.CutPrefix(t.Source, "simulated: ")
	if !ok {
		return ""
	}
	gpus := "GPUs"
	if len(t.GPUs) == 1 {
		gpus = "GPU"
	}
	return fmt.Sprintf("%s; using the simulated %s topology of %d %s", why, t.Spec, len(t.GPUs), gpus)
}
