package topo_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/topo"
)

// sysfs writes a fake /sys/devices/system under a temporary directory: cpu/online (unless
// online is "-"), node/nodeN/cpulist for each entry of nodes, and cpu/cpuN/topology/
// thread_siblings_list for each entry of siblings.
func sysfs(t *testing.T, online string, nodes map[int]string, siblings map[int]string) string {
	t.Helper()
	root := t.TempDir()
	write := func(path, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text+"\n"), 0o644))
	}
	if online != "-" {
		write(filepath.Join(root, "cpu", "online"), online)
	}
	for id, cpus := range nodes {
		write(filepath.Join(root, "node", fmt.Sprintf("node%d", id), "cpulist"), cpus)
	}
	for cpu, list := range siblings {
		write(filepath.Join(root, "cpu", fmt.Sprintf("cpu%d", cpu), "topology", "thread_siblings_list"), list)
	}
	return root
}

// plan renders a placement compactly: a rank's node and CPUs, ranks separated by " | ".
func plan(p topo.Placement) string {
	s := make([]string, len(p.Ranks))
	for i, rc := range p.Ranks {
		s[i] = fmt.Sprintf("%v:%v", rc.Nodes, rc.CPUs)
	}
	return strings.Join(s, " | ")
}

// TestPlaceAuto: the automatic plan of 1, 2, 4 and 8 ranks on fake machines: ranks in
// contiguous blocks over the nodes, a node's CPUs sliced by physical core among its ranks,
// offline CPUs and memory-only nodes left out, ranks sharing a node's every CPU where it
// has fewer CPUs than ranks.
func TestPlaceAuto(t *testing.T) {
	smt := map[int]string{} // 2 nodes of 4 cores with 2 threads each, siblings c and c+8
	for c := range 8 {
		smt[c], smt[c+8] = fmt.Sprintf("%d,%d", c, c+8), fmt.Sprintf("%d,%d", c, c+8)
	}
	machines := []struct {
		name    string
		root    string
		allowed topo.CPUList
		pinned  bool
		byRanks map[int]string
		notes   map[int]string // a note the plan of that many ranks must have
		nodes   int
		skipped string
	}{
		{name: "1 node x 2 CPUs", root: sysfs(t, "0-1", map[int]string{0: "0-1"}, nil), nodes: 1,
			byRanks: map[int]string{
				1: "[0]:0-1",
				2: "[0]:0 | [0]:1",
				4: "[0]:0-1 | [0]:0-1 | [0]:0-1 | [0]:0-1",
				8: "[0]:0-1 | [0]:0-1 | [0]:0-1 | [0]:0-1 | [0]:0-1 | [0]:0-1 | [0]:0-1 | [0]:0-1",
			},
			notes: map[int]string{1: "not pinned: one NUMA node", 4: "node 0: 4 ranks share its 2 CPUs, all of them"}},
		{name: "2 nodes x 8 CPUs", root: sysfs(t, "0-15", map[int]string{0: "0-7", 1: "8-15"}, nil), nodes: 2, pinned: true,
			byRanks: map[int]string{
				1: "[0]:0-7",
				2: "[0]:0-7 | [1]:8-15",
				4: "[0]:0-3 | [0]:4-7 | [1]:8-11 | [1]:12-15",
				8: "[0]:0-1 | [0]:2-3 | [0]:4-5 | [0]:6-7 | [1]:8-9 | [1]:10-11 | [1]:12-13 | [1]:14-15",
			}},
		{name: "4 nodes with holes in the numbering", root: sysfs(t, "0-3,8-11,16-19,24-27",
			map[int]string{0: "0-3", 1: "8-11", 2: "16-19", 3: "24-27"}, nil), nodes: 4, pinned: true,
			byRanks: map[int]string{
				1: "[0]:0-3",
				2: "[0]:0-3 | [2]:16-19",
				4: "[0]:0-3 | [1]:8-11 | [2]:16-19 | [3]:24-27",
				8: "[0]:0-1 | [0]:2-3 | [1]:8-9 | [1]:10-11 | [2]:16-17 | [2]:18-19 | [3]:24-25 | [3]:26-27",
			}},
		{name: "offline CPUs and a memory-only node", root: sysfs(t, "0-5,8-15",
			map[int]string{0: "0-7", 1: "8-15", 2: ""}, nil), nodes: 2, pinned: true, skipped: "node 2: no CPU online and allowed",
			byRanks: map[int]string{
				1: "[0]:0-5",
				2: "[0]:0-5 | [1]:8-15",
				4: "[0]:0-2 | [0]:3-5 | [1]:8-11 | [1]:12-15",
				8: "[0]:0 | [0]:1-2 | [0]:3 | [0]:4-5 | [1]:8-9 | [1]:10-11 | [1]:12-13 | [1]:14-15",
			}},
		{name: "an allowed set narrower than the machine", root: sysfs(t, "0-15", map[int]string{0: "0-7", 1: "8-15"}, nil),
			allowed: topo.CPUList{4, 5, 6, 7, 8, 9}, nodes: 2, pinned: true,
			byRanks: map[int]string{2: "[0]:4-7 | [1]:8-9", 8: "[0]:4 | [0]:5 | [0]:6 | [0]:7 | [1]:8-9 | [1]:8-9 | [1]:8-9 | [1]:8-9"},
			notes:   map[int]string{8: "node 1: 4 ranks share its 2 CPUs, all of them"}},
		{name: "SMT siblings stay together", root: sysfs(t, "0-15", map[int]string{0: "0-3,8-11", 1: "4-7,12-15"}, smt), nodes: 2, pinned: true,
			byRanks: map[int]string{
				2: "[0]:0-3,8-11 | [1]:4-7,12-15",
				4: "[0]:0-1,8-9 | [0]:2-3,10-11 | [1]:4-5,12-13 | [1]:6-7,14-15",
				8: "[0]:0,8 | [0]:1,9 | [0]:2,10 | [0]:3,11 | [1]:4,12 | [1]:5,13 | [1]:6,14 | [1]:7,15",
			}},
		{name: "no node directory: one node of the allowed CPUs", root: sysfs(t, "-", nil, nil), allowed: topo.CPUList{0, 1, 2, 3}, nodes: 1,
			byRanks: map[int]string{2: "[0]:0-1 | [0]:2-3"}},
	}
	for _, mc := range machines {
		t.Run(mc.name, func(t *testing.T) {
			m, err := topo.ReadMachine(mc.root, mc.allowed)
			require.NoError(t, err)
			require.Len(t, m.Nodes, mc.nodes)
			if mc.skipped != "" {
				require.Len(t, m.Skipped, 1)
				require.Contains(t, m.Skipped[0], mc.skipped)
			}
			for ranks, want := range mc.byRanks {
				p, err := topo.Place(m, ranks, topo.Affinity{})
				require.NoError(t, err)
				require.Equal(t, want, plan(p), "%d ranks", ranks)
				require.Equal(t, mc.pinned, p.Pinned)
				require.Equal(t, mc.pinned, p.CPUs() != nil)
				if note, ok := mc.notes[ranks]; ok {
					require.Contains(t, strings.Join(p.Notes, "\n"), note)
				}
			}
		})
	}
}

// TestReadMachineErrors: a malformed file is named with the text it holds.
func TestReadMachineErrors(t *testing.T) {
	cases := []struct {
		name, root string
		allowed    topo.CPUList
		want       string
	}{
		{"malformed node cpulist", sysfs(t, "0-3", map[int]string{0: "0-1", 1: "2-x"}, nil), nil,
			`node1/cpulist: CPU list "2-x": entry "2-x": "x" is not a CPU id`},
		{"a range backwards", sysfs(t, "0-3", map[int]string{0: "3-1"}, nil), nil, `node0/cpulist: CPU list "3-1": range "3-1" ends before it starts`},
		{"malformed online list", sysfs(t, "0,,1", nil, nil), nil, `cpu/online: CPU list "0,,1": entry "": "" is not a CPU id`},
		{"malformed siblings", sysfs(t, "0-1", map[int]string{0: "0-1"}, map[int]string{1: "1;0"}), nil,
			`cpu1/topology/thread_siblings_list: CPU list "1;0"`},
		{"a CPU beyond a CPU set", sysfs(t, "0-1024", nil, nil), nil, "CPU 1024 is outside 0-1023"},
		{"nothing both online and allowed", sysfs(t, "0-1", nil, nil), topo.CPUList{5}, "no CPU is both online (0-1) and allowed (5)"},
		{"neither online list nor allowed set", sysfs(t, "-", nil, nil), nil, "cpu/online: no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := topo.ReadMachine(tc.root, tc.allowed)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestDetectMachine reads this machine: every allowed CPU is on some node.
func TestDetectMachine(t *testing.T) {
	m, err := topo.DetectMachine()
	if err != nil && strings.Contains(err.Error(), "needs Linux") {
		t.Skip(err)
	}
	require.NoError(t, err)
	var all topo.CPUList
	for _, n := range m.Nodes {
		all = append(all, n.CPUs...)
	}
	require.ElementsMatch(t, m.Online.Intersect(m.Allowed), all)
}
