package comm

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
)

// Bootstrap is how the ranks of a communicator that live in processes of their own find
// each other: this process's rank, the world size, and an all-gather of the handles of
// every rank's registered buffers, as vLLM's create_shared_buffer all-gathers CUDA IPC
// handles (internal/ipc's GatherHandles and RelayGather do it over the driver's sockets).
type Bootstrap interface {
	// Rank returns this process's rank, Size the number of ranks.
	Rank() int
	Size() int
	// AllGather sends this rank's handles (their files stay the caller's) and returns every
	// rank's, index = rank, in the order each rank sent them. The files in the result are
	// the caller's to close.
	AllGather(mine []device.IPCHandle) ([][]device.IPCHandle, error)
}

// Join builds this process's side of a communicator whose other ranks live in other
// processes, each of which joins with the same configuration: it allocates the local
// rank's registered buffers (Config.Memory, device.SharedMemory when nil), all-gathers
// their handles through boot, opens every peer's, and binds the multicast object over the
// local staging buffer and the peers' where the fabric has a switch. node is this process's
// view of the node: rank r runs on its device Config.Devices[r]. Close it only once every
// rank is done (a barrier through the driver): a closed rank fails its peers' calls.
func Join(node *device.Node, cfg Config, boot Bootstrap) (*Communicator, error) {
	if cfg.Memory == nil {
		cfg.Memory = device.SharedMemory{}
	}
	c, err := newCommunicator(node, cfg)
	if err != nil {
		return nil, err
	}
	r := boot.Rank()
	if boot.Size() != c.n || r < 0 || r >= c.n {
		return nil, fmt.Errorf("comm: join as rank %d of %d, but the configuration has %d ranks", r, boot.Size(), c.n)
	}
	if err := c.addRank(r); err != nil {
		return nil, err
	}
	mine, err := c.export(c.ranks[r])
	if err != nil {
		c.free()
		return nil, err
	}
	all, err := boot.AllGather(mine)
	closeHandles(mine)
	defer func() {
		for _, hs := range all {
			closeHandles(hs)
		}
	}()
	if err == nil && len(all) != c.n {
		err = fmt.Errorf("the all-gather returned %d ranks' handles, want %d", len(all), c.n)
	}
	if err != nil {
		c.free()
		return nil, fmt.Errorf("comm: rank %d exchanging handles of registered buffers: %w", r, err)
	}
	if err := c.connect(all); err != nil {
		c.free()
		return nil, err
	}
	c.boot = boot
	return c, nil
}
