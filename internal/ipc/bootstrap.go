//go:build linux

package ipc

import "github.com/tpslice/tpslice/device"

// RankBootstrap is a rank process's side of comm's Bootstrap: its all-gather of handles
// goes through the driver over Conn (GatherHandles), as vLLM's create_shared_buffer
// all-gathers IPC handles through its process group.
type RankBootstrap struct {
	Conn *Conn
	// Index and World are this rank and the number of ranks.
	Index, World int
}

// Rank returns the rank's index.
func (b RankBootstrap) Rank() int { return b.Index }

// Size returns the number of ranks.
func (b RankBootstrap) Size() int { return b.World }

// AllGather sends mine and returns every rank's handles; the files are the caller's.
func (b RankBootstrap) AllGather(mine []device.IPCHandle) ([][]device.IPCHandle, error) {
	return GatherHandles(b.Conn, b.Index, b.World, mine)
}

// DriverBootstrap is comm's Bootstrap for a driver that is rank 0 itself: it relays the
// all-gather among the rank processes (Conns[r], nil at index 0 for itself) and keeps the
// set.
type DriverBootstrap struct{ Conns []*Conn }

// Rank returns 0: the driver is rank 0.
func (b DriverBootstrap) Rank() int { return 0 }

// Size returns the number of ranks.
func (b DriverBootstrap) Size() int { return len(b.Conns) }

// AllGather relays every rank's handles and returns them, rank 0's being mine without
// their files (the caller closes those itself); the other files are the caller's.
func (b DriverBootstrap) AllGather(mine []device.IPCHandle) ([][]device.IPCHandle, error) {
	all, err := RelayGather(b.Conns, [][]device.IPCHandle{mine})
	if err != nil {
		return nil, err
	}
	own := make([]device.IPCHandle, len(mine))
	for i, h := range mine {
		own[i], own[i].File = h, nil
	}
	all[0] = own
	return all, nil
}
