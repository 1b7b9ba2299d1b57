package tp

import (
	"fmt"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
)

// JoinGroup builds this process's rank of a group whose other ranks live in processes of
// their own, each of which joins with the same configuration (vLLM's worker builds its
// rank of the TP group the same way): a view of the node's World devices, this rank's
// side of the communicator (comm.Join, the handles all-gathered through boot) and this
// rank's streams. Run and Synchronize then run this rank only (Local); the other ranks'
// devices and streams are not this process's. Of CPUs, only this rank's list is used: its
// SM workers and its loading run there.
func JoinGroup(cfg GroupConfig, boot comm.Bootstrap) (*Group, error) {
	var cpus [][]int
	if r := boot.Rank(); r >= 0 && r < len(cfg.CPUs) {
		cpus = make([][]int, cfg.World)
		cpus[r] = cfg.CPUs[r]
	}
	node, err := device.NewNode(device.NodeConfig{Devices: cfg.World, Hosts: cfg.Hosts, SMs: cfg.SMs, Fabric: cfg.Fabric, CPUs: cpus})
	if err != nil {
		return nil, fmt.Errorf("tp: rank %d: %w", boot.Rank(), err)
	}
	cfg.Comm.Devices = nil
	c, err := comm.Join(node, cfg.Comm, boot)
	if err != nil {
		_ = node.Close()
		return nil, fmt.Errorf("tp: rank %d: %w", boot.Rank(), err)
	}
	g := &Group{node: node, comm: c, joined: true}
	if err := g.addStreams(cfg, []int{boot.Rank()}); err != nil {
		_ = g.Close()
		return nil, err
	}
	return g, nil
}
