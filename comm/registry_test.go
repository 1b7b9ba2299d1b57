package comm

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// TestRegistryDerivesAlgoTraits checks that what the algorithms' rows say reaches every
// function derived from them: names and parsing, the lists, protocols, wires, fused forms
// and what a communicator must have for the algorithm to run.
func TestRegistryDerivesAlgoTraits(t *testing.T) {
	tests := []struct {
		algo      Algo
		name      string
		proto     bool // takes LL, LL128 and Simple
		wire      bool // runs the low-precision wires
		multicast bool // available only with a multicast object
		hosts     bool // available only over several hosts
		fused     bool // package fused has its fused form
	}{
		{Ring, "ring", true, false, false, false, false},
		{OneShot, "oneshot", false, true, false, false, true},
		{TwoShot, "twoshot", false, true, false, false, true},
		{NVLS, "nvls", false, false, true, false, true},
		{Lamport, "lamport", false, false, false, false, false},
		{Tree, "tree", true, false, false, false, true},
		{TwoLevel, "twolevel", false, false, false, true, false},
		{Star, "star", false, false, false, false, false},
	}
	switchNode := newGroup(t, 2, device.NVSwitch, Config{}).c
	linkNode := newGroup(t, 2, device.NVLinkMesh, Config{}).c
	twoHosts := newNodeGroup(t, device.NodeConfig{Devices: 2, SMs: 2, Fabric: device.NVSwitch, Hosts: 2}, Config{}).c
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.name, tc.algo.String())
			got, err := ParseAlgo(tc.name)
			require.NoError(t, err)
			require.Equal(t, tc.algo, got)
			require.NotEmpty(t, tc.algo.Doc())
			require.Equal(t, tc.proto, TakesProto(tc.algo))
			require.Equal(t, tc.wire, WireFP8.Supports(tc.algo))
			require.Equal(t, tc.wire, WireBF16.Supports(tc.algo))
			require.True(t, WireExact.Supports(tc.algo))
			require.Equal(t, tc.fused, tc.algo.Fused())
			require.Equal(t, tc.algo == Star, tc.algo.Baseline(), "only the star is a baseline")
			require.Equal(t, tc.hosts, !slices.Contains(Algos, tc.algo))
			require.Equal(t, tc.hosts, slices.Contains(HostAlgos, tc.algo))
			require.Equal(t, !tc.hosts, switchNode.Available(tc.algo), "one host with a switch")
			require.Equal(t, !tc.hosts && !tc.multicast, linkNode.Available(tc.algo), "one host without a switch")
			require.Equal(t, !tc.multicast, twoHosts.Available(tc.algo), "two hosts: no multicast crosses them")
		})
	}
	require.False(t, switchNode.Available(Auto))
	require.False(t, switchNode.Available(Algo(99)))
	require.Equal(t, "algo(99)", Algo(99).String())
	require.Empty(t, Algo(99).Doc())
	require.False(t, Auto.Fused())
	require.Len(t, append(Algos, HostAlgos...), len(tests), "a row the table above lacks")
}

// TestAlgoNames checks the lists that help texts and errors print come from the rows.
func TestAlgoNames(t *testing.T) {
	require.Equal(t, "ring, oneshot, twoshot, nvls, lamport, tree, twolevel or star", AlgoNames(nil))
	require.Equal(t, "ring or tree", AlgoNames(TakesProto))
	require.Equal(t, "twolevel", AlgoNames(func(a Algo) bool { return a == TwoLevel }))
	require.Empty(t, AlgoNames(func(Algo) bool { return false }))
	require.Equal(t, "ring and tree", protoAlgoNames())
	require.Equal(t, "oneshot and twoshot", wireAlgoNames())
	_, err := ParseAlgo("hypercube")
	require.EqualError(t, err, `unknown all-reduce algorithm "hypercube" (want auto, ring, oneshot, twoshot, nvls, lamport, tree, twolevel or star)`)
}

// TestOfferedFollowsRows checks Offered's lists on every kind of node, in tie-break order.
func TestOfferedFollowsRows(t *testing.T) {
	tests := []struct {
		name         string
		fabric       device.Fabric
		nvls         bool
		hosts, ranks int
		want         []Algo
	}{
		{"switch", device.NVSwitch, true, 1, 8, []Algo{OneShot, NVLS, TwoShot, Ring, Tree}},
		{"switch without multicast", device.NVSwitch, false, 1, 8, []Algo{OneShot, TwoShot, Ring, Tree}},
		{"nvlink", device.NVLinkMesh, false, 1, 4, []Algo{OneShot, TwoShot, Ring, Tree}},
		{"pcie pair", device.PCIe, false, 1, 2, []Algo{OneShot, TwoShot, Ring, Tree}},
		{"pcie beyond two", device.PCIe, false, 1, 4, []Algo{Ring}},
		{"no hosts given", device.PCIe, false, 0, 4, []Algo{Ring}},
		{"two switch hosts", device.NVSwitch, true, 2, 16, []Algo{TwoLevel, OneShot, TwoShot, Ring}},
		{"two pcie hosts of two", device.PCIe, false, 2, 4, []Algo{TwoLevel, OneShot, TwoShot, Ring}},
		{"two pcie hosts of four", device.PCIe, false, 2, 8, []Algo{TwoLevel, Ring}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Offered(tc.fabric, tc.nvls, tc.hosts, tc.ranks))
		})
	}
}

// TestCostShapes checks each row's α-β shape against DESIGN.md's table at n = 8 (and the
// tree's depth at 6): steps of α, and bytes over a rank's link for S = 1 MiB.
func TestCostShapes(t *testing.T) {
	const s = 1 << 20
	tests := []struct {
		algo         Algo
		n            int
		steps, bytes float64
	}{
		{Ring, 8, 14, 2 * 7.0 / 8 * s},
		{OneShot, 8, 2, 7 * s},
		{TwoShot, 8, 4, 2 * 7.0 / 8 * s},
		{NVLS, 8, 2, s},
		{Lamport, 8, 2, 7 * s}, // one-shot's bytes; its saved barrier is below the model
		{Tree, 8, 6, 2 * s},
		{Tree, 6, 4, 2 * s},
		{Star, 8, 3, 2 * 7 * s}, // rank 0's link: 7 inputs in, then its sum out to 7 ranks
	}
	for _, tc := range tests {
		cost, ok := tc.algo.Cost()
		require.True(t, ok, "%v", tc.algo)
		require.Equal(t, tc.steps, cost.Steps(tc.n), "%v steps at n = %d", tc.algo, tc.n)
		require.InDelta(t, tc.bytes, cost.Bytes(tc.n, s), 1e-6, "%v bytes at n = %d", tc.algo, tc.n)
	}
	for _, a := range []Algo{Auto, TwoLevel, Algo(99)} {
		_, ok := a.Cost()
		require.False(t, ok, "%v has no α-β shape", a)
	}
}
