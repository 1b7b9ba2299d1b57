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
	compute []*device.Stream
	commS   []*device.Stream // nil without CommSMs
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
	for r := range cfg.World {
		dev := c.Rank(r).Device()
		if cfg.CommSMs < 0 || (cfg.CommSMs > 0 && cfg.CommSMs >= dev.NumSMs()) {
			_ = g.Close()
			return nil, fmt.Errorf("tp: %d comm SMs leave none of the %d SMs per device to compute", cfg.CommSMs, dev.NumSMs())
		}
		s, err := dev.NewStream("compute", dev.NumSMs()-cfg.CommSMs)
		if err != nil {
			_ = g.Close()
			return nil, fmt.Errorf("tp: rank %d: %w", r, err)
		}
		g.compute = append(g.compute, s)
		if cfg.CommSMs > 0 {
			cs, err := dev.NewStream("comm", cfg.CommSMs)
			if err != nil {
				_ = g.Close()
				return nil, fmt.Errorf("tp: rank %d: %w", r, err)
			}
			g.commS = append(g.commS, cs)
		}
	}
	return g, nil
}

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

// Run calls fn for every rank, each on its own goroutine (the rank workers: each rank's
// host issues its own kernels and collectives, as one process per GPU would), and returns
// the errors of all ranks that failed, each naming its rank.
func (g *Group) Run(fn func(rank int) error) error {
	errs := make([]error, g.World())
	var wg sync.WaitGroup
	for r := range g.World() {
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

// Synchronize waits for every rank's compute stream and returns their errors.
func (g *Group) Synchronize() error {
	return g.Run(func(r int) error { return g.compute[r].Synchronize() })
}

// Close frees the communicator's buffers and stops the node's streams.
func (g *Group) Close() error {
	return errors.Join(g.comm.Close(), g.node.Close())
}
