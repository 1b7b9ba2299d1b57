package comm

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

func TestBusBW(t *testing.T) {
	tests := []struct {
		n                int
		allReduce, gathr float64
	}{
		{0, 0, 0},
		{1, 0, 0},
		{2, 100, 50},
		{4, 150, 75},
		{8, 175, 87.5},
	}
	for _, tc := range tests {
		require.InDelta(t, tc.allReduce, BusBW(100, tc.n), 1e-9, "all-reduce n = %d", tc.n)
		require.InDelta(t, tc.gathr, AllGatherBusBW(100, tc.n), 1e-9, "all-gather n = %d", tc.n)
		require.InDelta(t, tc.allReduce, OpBusBW(device.OpAllReduce, 100, tc.n), 1e-9, "all-reduce n = %d", tc.n)
		for _, op := range []device.CollectiveOp{device.OpAllGather, device.OpReduceScatter} {
			require.InDelta(t, tc.gathr, OpBusBW(op, 100, tc.n), 1e-9, "%s n = %d", op, tc.n)
		}
	}
}
