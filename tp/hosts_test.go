package tp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGroupAcrossHosts: a group of 16 ranks over two hosts of 8 (MaxNodeDevices) builds,
// its communicator knows the hosts, and a plan shards over all 16.
func TestGroupAcrossHosts(t *testing.T) {
	g, err := NewGroup(GroupConfig{World: 16, Hosts: 2, SMs: 1})
	require.NoError(t, err)
	defer g.Close()
	require.Equal(t, 16, g.World())
	require.Equal(t, 2, g.Comm().Hosts())
	require.Equal(t, 1, g.Node().HostOf(8))
	p, err := NewPlan(16, Shape{Hidden: 256, Intermediate: 768, Heads: 16, KVHeads: 8, HeadDim: 16, Vocab: 512})
	require.NoError(t, err)
	require.Equal(t, 2, p.KVReplicas)

	_, err = NewGroup(GroupConfig{World: 16, SMs: 1})
	require.ErrorContains(t, err, "tp: device: node needs 1 to 8 devices, got 16")
}
