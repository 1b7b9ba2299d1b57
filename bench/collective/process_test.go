//go:build linux

package collective

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// TestMergeChecks: the ranks' wrong elements add up, and an all-reduce rank whose output
// digest differs from rank 0's counts every element wrong (ranks must agree bit for bit);
// the other collectives' ranks hold different outputs.
func TestMergeChecks(t *testing.T) {
	replies := []benchReply{{Wrong: 1, Digest: 7}, {Wrong: 2, Digest: 7}, {Digest: 8}}
	require.Equal(t, 3+100, merge(Op{Kind: device.OpAllReduce, N: 3}, replies, 100).Wrong)
	require.Equal(t, 3, merge(Op{Kind: device.OpAllGather, N: 3}, replies, 100).Wrong)
	replies[2].Digest = 7
	require.Equal(t, 3, merge(Op{Kind: device.OpAllReduce, N: 3}, replies, 100).Wrong)
}
