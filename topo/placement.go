package topo

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Affinity is what --cpu-affinity asks for: the automatic plan (the zero value), no
// pinning, or one CPU list per rank.
type Affinity struct {
	// None turns pinning off.
	None bool
	// Lists holds rank r's CPUs at index r; nil asks for the automatic plan.
	Lists []CPUList
}

// ParseAffinity reads --cpu-affinity: "auto" (or ""), "none", or one CPU list per rank
// separated by '|' ("0-3|4-7", the syntax of vLLM's VLLM_CPU_OMP_THREADS_BIND). Lists may
// overlap (ranks then share those CPUs, which Place says); whether they fit the machine
// and the rank count is Place's to check. An error names the rank and quotes its list.
func ParseAffinity(s string) (Affinity, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", Auto:
		return Affinity{}, nil
	case "none":
		return Affinity{None: true}, nil
	}
	var a Affinity
	for r, list := range strings.Split(s, "|") {
		cpus, err := ParseCPUList(list)
		switch {
		case err != nil:
			return Affinity{}, fmt.Errorf("rank %d: %w", r, err)
		case len(cpus) == 0:
			return Affinity{}, fmt.Errorf("rank %d: empty CPU list in %q (want one list a rank, separated by '|', or auto or none)", r, s)
		}
		a.Lists = append(a.Lists, cpus)
	}
	return a, nil
}

// String writes a as ParseAffinity reads it.
func (a Affinity) String() string {
	switch {
	case a.None:
		return "none"
	case a.Lists == nil:
		return Auto
	}
	s := make([]string, len(a.Lists))
	for i, l := range a.Lists {
		s[i] = l.String()
	}
	return strings.Join(s, "|")
}

// RankCPUs is where one rank runs: its CPUs and the NUMA nodes they are on, whose memory
// the rank's first touches take.
type RankCPUs struct {
	Rank  int     `json:"rank"`
	Nodes []int   `json:"nodes"`
	CPUs  CPUList `json:"cpus"`
}

// Placement is the CPUs of every rank of a TP group.
type Placement struct {
	// Affinity is what was asked for.
	Affinity Affinity `json:"-"`
	// Ranks holds rank r at index r; empty when Affinity is none.
	Ranks []RankCPUs `json:"ranks"`
	// Pinned says whether the ranks are held to their CPUs; the automatic plan on one NUMA
	// node is not applied (Notes says why).
	Pinned bool `json:"pinned"`
	// Notes say what the plan chose where it is not plain: ranks that share CPUs, a rank
	// whose CPUs span nodes, the plan left unapplied.
	Notes []string `json:"notes,omitempty"`
}

// Place plans the CPUs of ranks ranks on m as a asks. The automatic plan spreads the ranks
// over the NUMA nodes in contiguous blocks, rank r on node ⌊r·nodes/ranks⌋ (ranks 0…k-1 on
// the first node, …, as vLLM's CPU backend and DeepSpeed's numactl launcher bind a rank
// per node, and as GPUs 0-3 and 4-7 of an 8-GPU server hang off its two sockets); a rank
// alone on its node gets the whole node, ranks that share a node get disjoint slices of
// its physical cores (SMT siblings stay together), and where a node has fewer CPUs than
// ranks, each of its ranks gets all of them (one CPU a few ranks would serialize them: a
// pinned SM worker cannot move to an idle CPU). On a machine of one node the plan is not
// applied: there is no remote memory to avoid, and on this project's two-CPU machine
// pinning cost a TP 2 decode step at batch 1 a quarter of its time
// (docs/benchmarks/processes.md).
// Explicit lists are checked against the online and allowed CPUs; an error names the rank.
func Place(m Machine, ranks int, a Affinity) (Placement, error) {
	if ranks < 1 {
		return Placement{}, fmt.Errorf("topo: a placement needs at least one rank, got %d", ranks)
	}
	p := Placement{Affinity: a}
	switch {
	case a.None:
		p.Notes = append(p.Notes, "not pinned (affinity none)")
		return p, nil
	case a.Lists != nil:
		return placeLists(m, ranks, a)
	}
	p.Ranks = make([]RankCPUs, ranks)
	for n, node := range m.Nodes {
		var on []int // the ranks on node n, in order
		for r := range ranks {
			if r*len(m.Nodes)/ranks == n {
				on = append(on, r)
			}
		}
		units := node.Cores
		switch {
		case len(on) > len(node.CPUs): // the ranks share every CPU of the node
			units = []CPUList{node.CPUs}
			p.Notes = append(p.Notes, fmt.Sprintf("node %d: %d ranks share its %d CPUs, all of them", node.ID, len(on), len(node.CPUs)))
		case len(on) > len(units): // fewer cores than ranks: slice by CPU
			units = make([]CPUList, len(node.CPUs))
			for i, c := range node.CPUs {
				units[i] = CPUList{c}
			}
		}
		for i, r := range on {
			lo, hi := i*len(units)/len(on), (i+1)*len(units)/len(on)
			hi = max(hi, lo+1) // ranks sharing the node's one unit
			cpus := slices.Concat(units[lo:hi]...)
			slices.Sort(cpus) // a core's siblings come after lower CPUs of later cores
			p.Ranks[r] = RankCPUs{Rank: r, Nodes: []int{node.ID}, CPUs: cpus}
		}
	}
	p.Pinned = len(m.Nodes) > 1
	if !p.Pinned {
		p.Notes = append(p.Notes, "not pinned: one NUMA node, no remote memory to avoid (explicit CPU lists pin the ranks anyway)")
	}
	return p, nil
}

// placeLists checks explicit per-rank lists against m.
func placeLists(m Machine, ranks int, a Affinity) (Placement, error) {
	if len(a.Lists) != ranks {
		return Placement{}, fmt.Errorf("topo: CPU affinity %q: %d CPU lists for %d ranks; give one a rank, separated by '|'", a, len(a.Lists), ranks)
	}
	p := Placement{Affinity: a, Pinned: true}
	for r, cpus := range a.Lists {
		if off := cpus.Without(m.Online); len(off) > 0 {
			return Placement{}, fmt.Errorf("topo: rank %d's CPUs %q: CPUs %v are not online (online: %v)", r, cpus.String(), off, m.Online)
		}
		if out := cpus.Without(m.Allowed); len(out) > 0 {
			return Placement{}, fmt.Errorf("topo: rank %d's CPUs %q: CPUs %v are outside the CPUs this process may run on (%v)", r, cpus.String(), out, m.Allowed)
		}
		rc := RankCPUs{Rank: r, CPUs: cpus}
		for _, node := range m.Nodes {
			if len(cpus.Intersect(node.CPUs)) > 0 {
				rc.Nodes = append(rc.Nodes, node.ID)
			}
		}
		if len(rc.Nodes) > 1 {
			p.Notes = append(p.Notes, fmt.Sprintf("rank %d's CPUs span nodes %v: its memory is on whichever node first touches it", r, rc.Nodes))
		}
		for q := range r {
			if both := cpus.Intersect(a.Lists[q]); len(both) > 0 {
				p.Notes = append(p.Notes, fmt.Sprintf("ranks %d and %d share CPUs %v", q, r, both))
			}
		}
		p.Ranks = append(p.Ranks, rc)
	}
	return p, nil
}

// CPUs returns each rank's CPUs to pin, rank r at index r (device.NodeConfig.CPUs), or nil
// when the placement pins nothing.
func (p Placement) CPUs() [][]int {
	if !p.Pinned {
		return nil
	}
	out := make([][]int, len(p.Ranks))
	for r, rc := range p.Ranks {
		out[r] = rc.CPUs
	}
	return out
}

// Render writes the placement, a header, a line a rank ("rank 0: node 0, CPUs 0-13") and
// its notes.
func (p Placement) Render(w io.Writer) error {
	var b strings.Builder
	pinned := "pinned"
	if !p.Pinned {
		pinned = "not pinned"
	}
	fmt.Fprintf(&b, "CPU placement of %d ranks (affinity %v): %s\n", len(p.Ranks), p.Affinity, pinned)
	for _, rc := range p.Ranks {
		nodes := make([]string, len(rc.Nodes))
		for i, n := range rc.Nodes {
			nodes[i] = fmt.Sprint(n)
		}
		fmt.Fprintf(&b, "  rank %d: node %s, CPUs %v\n", rc.Rank, strings.Join(nodes, "+"), rc.CPUs)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Render writes the machine's usable NUMA nodes, a line each, and the nodes skipped.
func (m Machine) Render(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "NUMA nodes: %d (online CPUs %v, allowed %v)\n", len(m.Nodes), m.Online, m.Allowed)
	for _, n := range m.Nodes {
		fmt.Fprintf(&b, "  node %d: CPUs %v (%d cores)\n", n.ID, n.CPUs, len(n.Cores))
	}
	for _, s := range m.Skipped {
		fmt.Fprintf(&b, "  skipped %s\n", s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
