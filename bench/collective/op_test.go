package collective

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
)

// TestParseOpOver: ranks split evenly over hosts, up to 8 a host; only the all-reduce
// crosses hosts or runs a compressed wire; each refusal names its flag.
func TestParseOpOver(t *testing.T) {
	op, err := ParseOpOver("allreduce", 16, 2, comm.WireFP8)
	require.NoError(t, err)
	require.Equal(t, Op{Kind: device.OpAllReduce, N: 16}, op)
	op, err = ParseOpOver("allgather", 8, 1, comm.WireExact)
	require.NoError(t, err)
	require.Equal(t, Op{Kind: device.OpAllGather, N: 8}, op)
	for _, tc := range []struct {
		op           string
		ranks, hosts int
		wire         comm.Wire
		want         string
	}{
		{"allreduce", 5, 2, comm.WireExact, "--ranks 5 over --hosts 2: want a multiple of 2 up to 16"},
		{"allreduce", 18, 2, comm.WireExact, "--ranks 18 over --hosts 2: want a multiple of 2 up to 16"},
		{"allreduce", 1, 2, comm.WireExact, "--ranks 1 over --hosts 2: want a multiple of 2 up to 16"},
		{"allreduce", 8, 0, comm.WireExact, "--hosts: want at least 1, got 0"},
		{"allreduce", 9, 1, comm.WireExact, "--ranks: want 1 to 8, got 9"},
		{"allreduce", 0, 1, comm.WireExact, "--ranks: want 1 to 8, got 0"},
		{"broadcast", 8, 1, comm.WireExact, `--op: want allreduce, reducescatter or allgather, got "broadcast"`},
		{"allgather", 8, 2, comm.WireExact, "--op allgather over --hosts 2: only the all-reduce is modelled across hosts"},
		{"reducescatter", 8, 1, comm.WireBF16, "--op reducescatter: --allreduce-dtype bf16 is the all-reduce's wire; reducescatter runs exact"},
	} {
		_, err := ParseOpOver(tc.op, tc.ranks, tc.hosts, tc.wire)
		require.EqualError(t, err, tc.want, "%+v", tc)
	}
}
