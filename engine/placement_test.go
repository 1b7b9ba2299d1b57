package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/topo"
)

// TestPinnedRanks: ranks pinned a CPU each (the first two this process may use) run their
// devices' SM workers there and give the tokens of unpinned ranks, bitwise.
func TestPinnedRanks(t *testing.T) {
	allowed, err := topo.AllowedCPUs()
	if err != nil || len(allowed) < 2 {
		t.Skipf("pinning two ranks a CPU each needs two allowed CPUs (allowed %v, %v)", allowed, err)
	}
	ids := map[bool][]int32{}
	for _, pin := range []bool{true, false} {
		aff := topo.Affinity{None: true}
		if pin {
			aff = topo.Affinity{Lists: []topo.CPUList{{allowed[0]}, {allowed[1]}}}
		}
		e, err := New(Config{Model: "tiny", TP: 2, MaxRunning: 2, CPUAffinity: aff})
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.Close() })
		require.Equal(t, pin, e.Placement().Pinned)
		for r := range 2 {
			want := []int(nil)
			if pin {
				want = []int{allowed[r]}
			}
			require.Equal(t, want, e.Model().Group().Device(r).CPUs(), "rank %d", r)
		}
		res, err := e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 8}, func(Token) error { return nil })
		require.NoError(t, err)
		ids[pin] = res.OutputIDs
	}
	require.Equal(t, ids[false], ids[true])
}

// TestPlacementErrors: CPU lists that do not fit the TP degree or the machine are refused
// before anything is loaded, naming the rank.
func TestPlacementErrors(t *testing.T) {
	_, err := New(Config{Model: "tiny", TP: 2, CPUAffinity: topo.Affinity{Lists: []topo.CPUList{{0}}}})
	require.ErrorContains(t, err, `engine: topo: CPU affinity "0": 1 CPU lists for 2 ranks`)
	_, err = New(Config{Model: "tiny", TP: 1, CPUAffinity: topo.Affinity{Lists: []topo.CPUList{{1023}}}})
	require.ErrorContains(t, err, `rank 0's CPUs "1023": CPUs 1023 are not online`)
}
