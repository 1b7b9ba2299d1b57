package perf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/hw"
)

// TestPriceNUMA: on a server of 100 B/s a socket and 25 B/s a direction between them, each
// placement's step is its busiest resource's bytes over bandwidth.
func TestPriceNUMA(t *testing.T) {
	s := hw.TwoSocket{Name: "toy", MemBytesPerSec: 100, LinkBytesPerSec: 25}
	for _, tc := range []struct {
		ranks int
		p     NUMAPlacement
		want  time.Duration
		bound string
	}{
		{2, PerNode, time.Second, "socket 0's memory"},                   // 100 B from each socket's own memory
		{2, Interleaved, 2 * time.Second, "the link from socket 0 to 1"}, // 50 B each way over the link
		{2, MemoryOnOneNode, 4 * time.Second, "the link from socket 0 to 1"},
		{2, OneSocket, 2 * time.Second, "socket 0's memory"}, // 200 B from one socket, no link
		{1, PerNode, time.Second, "socket 0's memory"},
		{1, Interleaved, 2 * time.Second, "the link from socket 1 to 0"},
		{4, PerNode, 2 * time.Second, "socket 0's memory"}, // ranks 0, 1 on socket 0: 200 B
		{4, Interleaved, 4 * time.Second, "the link from socket 0 to 1"},
		{8, OneSocket, 8 * time.Second, "socket 0's memory"},
	} {
		step, err := PriceNUMA(s, tc.ranks, 100, tc.p)
		require.NoError(t, err)
		require.Equal(t, tc.want, step.Time, "%d ranks, %v", tc.ranks, tc.p)
		require.Equal(t, tc.bound, step.Bound, "%d ranks, %v", tc.ranks, tc.p)
	}
	_, err := PriceNUMA(s, 0, 100, PerNode)
	require.ErrorContains(t, err, "0 ranks × 100 bytes")
	_, err = PriceNUMA(s, 2, 100, NUMAPlacement(9))
	require.ErrorContains(t, err, "unknown NUMA placement 9")
}

// TestPriceNUMAServers: at TP 2 a rank per node reads at twice the bandwidth of one
// socket, and no placement beats it; on the Xeon, whose UPI links carry less than half a
// socket's DRAM bandwidth, the placements that read across them lose more.
func TestPriceNUMAServers(t *testing.T) {
	for _, s := range hw.TwoSockets() {
		steps := map[NUMAPlacement]time.Duration{}
		for _, p := range NUMAPlacements {
			step, err := PriceNUMA(s, 2, 1<<30, p)
			require.NoError(t, err)
			steps[p] = step.Time
		}
		require.InDelta(t, 2, float64(steps[OneSocket])/float64(steps[PerNode]), 1e-6, s.Name)
		require.GreaterOrEqual(t, steps[MemoryOnOneNode], steps[OneSocket], s.Name)
		require.GreaterOrEqual(t, steps[Interleaved], steps[PerNode], s.Name)
		if s.Name == "2x-xeon-8480" {
			require.Greater(t, steps[MemoryOnOneNode], steps[OneSocket])
			require.Greater(t, steps[Interleaved], steps[PerNode])
		}
	}
	_, err := hw.LookupTwoSocket("2x-pentium")
	require.ErrorContains(t, err, `unknown two-socket server "2x-pentium" (have 2x-xeon-8480, 2x-epyc-9654)`)
}
