package topo_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/topo"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0-3,8-11", "0-3,8-11"}, {" 5 ", "5"}, {"3,1,2,2", "1-3"}, {"0-1,1-4", "0-4"}, {"", ""}, {"\n", ""}, {"7,9", "7,9"},
	} {
		l, err := topo.ParseCPUList(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, l.String(), tc.in)
	}
	for _, tc := range []struct{ in, want string }{
		{"a", `CPU list "a": entry "a": "a" is not a CPU id`},
		{"1-", `entry "1-": "" is not a CPU id`},
		{"-1", `entry "-1": "" is not a CPU id`},
		{"4-2", `range "4-2" ends before it starts`},
		{"0,2000", "CPU 2000 is outside 0-1023"},
		{"0-3:2/4", `"3:2/4" is not a CPU id`},
	} {
		_, err := topo.ParseCPUList(tc.in)
		require.ErrorContains(t, err, tc.want, tc.in)
	}
}

func TestParseAffinity(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "auto"}, {"AUTO", "auto"}, {"none", "none"}, {"0-3|4-7", "0-3|4-7"}, {"1|0", "1|0"}, {"0-1|1-2", "0-1|1-2"},
	} {
		a, err := topo.ParseAffinity(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, a.String(), tc.in)
	}
	for _, tc := range []struct{ in, want string }{
		{"0-3|4-x", `rank 1: CPU list "4-x": entry "4-x"`},
		{"0||1", `rank 1: empty CPU list in "0||1"`},
		{"0-3|", `rank 1: empty CPU list`},
		{"nine", `rank 0: CPU list "nine"`},
	} {
		_, err := topo.ParseAffinity(tc.in)
		require.ErrorContains(t, err, tc.want, tc.in)
	}
}

// TestPlaceLists: explicit lists are checked against the machine, rank by rank; overlaps
// and lists that span nodes are allowed and said.
func TestPlaceLists(t *testing.T) {
	m, err := topo.ReadMachine(sysfs(t, "0-5,8-15", map[int]string{0: "0-7", 1: "8-15"}, nil), topo.CPUList{0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12})
	require.NoError(t, err)
	place := func(s string, ranks int) (topo.Placement, error) {
		a, err := topo.ParseAffinity(s)
		require.NoError(t, err)
		return topo.Place(m, ranks, a)
	}
	p, err := place("0-3|8-11", 2)
	require.NoError(t, err)
	require.Equal(t, "[0]:0-3 | [1]:8-11", plan(p))
	require.True(t, p.Pinned)
	require.Equal(t, [][]int{{0, 1, 2, 3}, {8, 9, 10, 11}}, p.CPUs())
	require.Empty(t, p.Notes)

	p, err = place("0-3|2-5,8", 2)
	require.NoError(t, err)
	require.Equal(t, "[0]:0-3 | [0 1]:2-5,8", plan(p))
	require.Equal(t, []string{"rank 1's CPUs span nodes [0 1]: its memory is on whichever node first touches it", "ranks 0 and 1 share CPUs 2-3"}, p.Notes)

	p, err = place("none", 4)
	require.NoError(t, err)
	require.False(t, p.Pinned)
	require.Nil(t, p.CPUs())

	for _, tc := range []struct {
		spec  string
		ranks int
		want  string
	}{
		{"0-3|8-11", 4, `CPU affinity "0-3|8-11": 2 CPU lists for 4 ranks; give one a rank, separated by '|'`},
		{"0|6-8", 2, `rank 1's CPUs "6-8": CPUs 6-7 are not online (online: 0-5,8-15)`},
		{"13|0", 2, `rank 0's CPUs "13": CPUs 13 are outside the CPUs this process may run on (0-5,8-12)`},
	} {
		_, err := place(tc.spec, tc.ranks)
		require.ErrorContains(t, err, tc.want, tc.spec)
	}
	_, err = topo.Place(m, 0, topo.Affinity{})
	require.ErrorContains(t, err, "at least one rank, got 0")
}

func TestPlacementRender(t *testing.T) {
	m, err := topo.ReadMachine(sysfs(t, "0-15", map[int]string{0: "0-7", 1: "8-15"}, nil), nil)
	require.NoError(t, err)
	p, err := topo.Place(m, 2, topo.Affinity{})
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, p.Render(&b))
	require.Equal(t, "CPU placement of 2 ranks (affinity auto): pinned\n  rank 0: node 0, CPUs 0-7\n  rank 1: node 1, CPUs 8-15\n", b.String())
	b.Reset()
	require.NoError(t, m.Render(&b))
	require.Equal(t, "NUMA nodes: 2 (online CPUs 0-15, allowed 0-15)\n  node 0: CPUs 0-7 (8 cores)\n  node 1: CPUs 8-15 (8 cores)\n", b.String())
}
