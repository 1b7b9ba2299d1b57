//go:build linux

package ipc

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// shareable returns count exported handles of rank r's device: memory files of r+1, r+2, …
// f32 values, so that every handle tells where it came from.
func shareable(t *testing.T, node *device.Node, r, count int) []device.IPCHandle {
	t.Helper()
	d, err := node.Device(r)
	require.NoError(t, err)
	var hs []device.IPCHandle
	for i := range count {
		b, err := d.AllocShareable(dtype.F32, 16*(r+1+i))
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Free() })
		h, err := b.ExportShareable()
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Close() })
		hs = append(hs, h)
	}
	return hs
}

// TestRelayGather all-gathers the handles of three ranks, rank 0 the driver's own: every
// rank gets every rank's handles in order, with files of their own.
func TestRelayGather(t *testing.T) {
	node, err := device.NewNode(device.NodeConfig{Devices: 3, SMs: 1})
	require.NoError(t, err)
	defer node.Close()
	const size, each = 3, 2
	conns := make([]*Conn, size)
	results := make([]chan [][]device.IPCHandle, size)
	for r := 1; r < size; r++ {
		driver, rank := connPair(t)
		conns[r], results[r] = driver, make(chan [][]device.IPCHandle, 1)
		mine := shareable(t, node, r, each)
		go func() {
			all, err := GatherHandles(rank, r, size, mine)
			if err != nil {
				t.Error(err)
			}
			results[r] <- all
		}()
	}
	own := shareable(t, node, 0, each)
	all, err := RelayGather(conns, [][]device.IPCHandle{own})
	require.NoError(t, err)
	check := func(who int, all [][]device.IPCHandle) {
		require.Len(t, all, size, "rank %d", who)
		for p, hs := range all {
			require.Len(t, hs, each, "rank %d's copy of rank %d's handles", who, p)
			for i, h := range hs {
				require.Equal(t, p, h.Owner)
				require.Equal(t, 16*(p+1+i), h.Count)
				require.NotNil(t, h.File)
			}
		}
	}
	check(0, all)
	closeAll(all[1:])
	for r := 1; r < size; r++ {
		got := <-results[r]
		check(r, got)
		closeAll(got)
	}
}

// TestRelayGatherNamesBadRank: a rank whose message is not a list of handles is named.
func TestRelayGatherNamesBadRank(t *testing.T) {
	node, err := device.NewNode(device.NodeConfig{Devices: 3, SMs: 1})
	require.NoError(t, err)
	defer node.Close()
	d1, r1 := connPair(t)
	d2, r2 := connPair(t)
	h1, h2 := shareable(t, node, 1, 1), shareable(t, node, 2, 1)
	var sent sync.WaitGroup // before the handles' files close
	defer sent.Wait()
	sent.Go(func() { _ = sendHandles(r1, 1, h1) })
	sent.Go(func() { _ = r2.Send(Message{Kind: 99, Body: []byte("hello")}) })
	_, err = RelayGather([]*Conn{nil, d1, d2}, [][]device.IPCHandle{nil})
	require.ErrorContains(t, err, "ipc: relay gather: rank 2: ipc: receive handles from pid")
	require.ErrorContains(t, err, "got a message of kind 99, want 2 (handles)")

	d3, r3 := connPair(t)
	sent.Go(func() { _ = sendHandles(r3, 2, h2) }) // rank 2's list from rank 1
	_, err = RelayGather([]*Conn{nil, d3}, [][]device.IPCHandle{nil})
	require.ErrorContains(t, err, "rank 1: ipc: receive handles from pid")
	require.ErrorContains(t, err, "the handles of rank 2 came where rank 1's belong")

	_, err = RelayGather([]*Conn{nil}, nil)
	require.ErrorContains(t, err, "rank 0 has neither a connection nor a list of handles of its own")
}
