package tp

import (
	"errors"
	"fmt"
	"sync"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
)

// GroupConfig configures a TP group on the CPU device runtime.
type GroupConfig struct {
	// World is the number of ranks (devices).
	World int
	// Hosts splits the ranks evenly over this many hosts (device.NodeConfig.Hosts); 0
	// means one.
	Hosts int
	// SMs per device (0: GOMAXPROCS) and the simulated interconnect (0: NVSwitch).
	SMs    int
	Fabric device.Fabric
	// Comm configures the communicator (Devices is set by the group).
	Comm comm.Config
	// CommSMs, when > 0, gives every rank a comm stream limited to that many SMs and
	// limits the compute stream to the rest, so that collectives and compute can overlap.
	CommSMs int
	// CPUs, when set, pins rank r's SM workers and its loading (RunPinned) to CPUs[r]
	// (device.NodeConfig.CPUs; topo.Placement.CPUs plans them).
	CPUs [][]int
}

// Group is a TP group: a node of World devices, a communicator over them and, per rank, a
// compute stream. Ranks issue their work through Run.
type Group struct {
	node    *device.Node
	comm    *comm.Communicator
	local   []int            // the ranks this process runs: all of them, or one (JoinGroup)
	joined  bool             // built by JoinGroup: the other ranks live in other processes
	compute []*device.Stream // by rank; nil for a rank of another process
	commS   []*device.Stream // by rank; nil without CommSMs
}

// NewGroup builds the node, the communicator and one compute stream per rank.
func NewGroup(cfg GroupConfig) (*Group, error) {
	node, err := device.NewNode(device.NodeConfig{Devices: cfg.World, Hosts: cfg.Hosts, SMs: cfg.SMs, Fabric: cfg.Fabric, CPUs: cfg.CPUs})
	if err != nil {
		return nil, fmt.Errorf("tp: %w", err)
	}
	cfg.Comm.Devices = nil
	c, err := comm.New(node, cfg.Comm)
	if err != nil {
		_ = node.Close()
		return nil, fmt.Errorf("tp: %w", err)
	}
	g := &Group{node: node, comm: c}
	if err := g.addStreams(cfg, rangeOf(cfg.World)); err != nil {
		_ = g.Close()
		return nil, err
	}
	return g, nil
}

// rangeOf returns 0, 1, …, n−1.
func rangeOf(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// addStreams gives each of the local ranks its compute stream (and comm stream with
// CommSMs).
func (g *Group) addStreams(cfg GroupConfig, local []int) error {
	g.local = local
	g.compute = make([]*device.Stream, cfg.World)
	if cfg.CommSMs > 0 {
		g.commS = make([]*device.Stream, cfg.World)
	}
	for _, r := range local {
		dev := g.comm.Rank(r).Device()
		if cfg.CommSMs < 0 || (cfg.CommSMs > 0 && cfg.CommSMs >= dev.NumSMs()) {
			return fmt.Errorf("tp: %d comm SMs leave none of the %d SMs per device to compute", cfg.CommSMs, dev.NumSMs())
		}
		s, err := dev.NewStream("compute", dev.NumSMs()-cfg.CommSMs)
		if err != nil {
			return fmt.Errorf("tp: rank %d: %w", r, err)
		}
		g.compute[r] = s
		if cfg.CommSMs > 0 {
			if g.commS[r], err = dev.NewStream("comm", cfg.CommSMs); err != nil {
				return fmt.Errorf("tp: rank %d: %w", r, err)
			}
		}
	}
	return nil
}

// Joined reports whether the group was joined by a worker process (JoinGroup), its other
// ranks living in processes of their own.
func (g *Group) Joined() bool { return g.joined }

// Local returns the ranks this process runs, in order: every rank of a group NewGroup
// built, the one rank of a JoinGroup.
func (g *Group) Local() []int { return g.local }

// CommStream returns rank r's comm stream, or nil when the group has none (CommSMs = 0).
func (g *Group) CommStream(r int) *device.Stream {
	if g.commS == nil {
		return nil
	}
	return g.commS[r]
}

// World returns the number of ranks.
func (g *Group) World() int { return g.comm.Size() }

// Comm returns the group's communicator.
func (g *Group) Comm() *comm.Communicator { return g.comm }

// Rank returns rank r's communicator handle.
func (g *Group) Rank(r int) *comm.Rank { return g.comm.Rank(r) }

// Device returns rank r's device.
func (g *Group) Device(r int) *device.Device { return g.comm.Rank(r).Device() }

// Stream returns rank r's compute stream.
func (g *Group) Stream(r int) *device.Stream { return g.compute[r] }

// Run calls fn for every local rank (Local), each on its own goroutine (the rank
// workers: each rank's host issues its own kernels and collectives, as one process per
// GPU would), and returns the errors of all ranks that failed, each naming its rank.
func (g *Group) Run(fn func(rank int) error) error {
	errs := make([]error, g.World())
	var wg sync.WaitGroup
	for _, r := range g.local {
		wg.Go(func() {
			if err := fn(r); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// RunPinned calls fn for every rank as Run does, each on a thread pinned to its rank's
// CPUs (device.Device.RunOnCPUs; fn's own goroutine where the group has none): the pages fn
// first touches then come from the memory of the rank's NUMA node, which is how a rank's
// weights should be loaded.
func (g *Group) RunPinned(fn func(rank int) error) error {
	return g.Run(func(r int) error { return g.Device(r).RunOnCPUs(func() error { return fn(r) }) })
}

// Synchronize waits for every local rank's compute stream and returns their errors.
func (g *Group) Synchronize() error {
	return g.Run(func(r int) error { return g.compute[r].Synchronize() })
}

// Close frees the communicator's buffers and stops the node's streams.
func (g *Group) Close() error {
	return errors.Join(g.comm.Close(), g.node.Close())
}
