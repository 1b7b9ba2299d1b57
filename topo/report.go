package topo

// Report is a node described for tpslice topo --json: the topology and what it means for
// tpslice (the fabric, the hw profile), the machine's NUMA nodes and where each rank runs.
type Report struct {
	Topology
	Fabric  string `json:"fabric"`
	Profile string `json:"profile,omitempty"` // absent when no hw profile describes the GPUs
	Note    string `json:"note,omitempty"`    // why the topology is simulated
	// NUMA is this machine's CPUs by NUMA node, Placement where a rank a GPU would run.
	NUMA      Machine   `json:"numa"`
	Placement Placement `json:"placement"`
}

// NewReport describes t, with machine m and the ranks' placement p on it.
func NewReport(t Topology, m Machine, p Placement) Report {
	rep := Report{Topology: t, Fabric: t.Fabric().String(), Note: t.Note(), NUMA: m, Placement: p}
	if prof, ok := t.Profile(); ok {
		rep.Profile = prof.Name
	}
	return rep
}
