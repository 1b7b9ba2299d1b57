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
	// SMs per device (0: GOMAXPROCS) and the simulated interconnect (0: NVSwitch).
	SMs    int
	Fabric device.Fabric
	// Comm configures the communicator (Devices is set by the group).
	Comm comm.Config
}

// Group is a TP group: a node of World devices, a communicator over them and, per rank, a
// compute stream. Ranks issue their work through Run.
type Group struct {
	node    *device.Node
	comm    *comm.Communicator
	compute []*device.Stream
}

// NewGroup builds the node, the communicator and one compute stream per rank.
func NewGroup(cfg GroupConfig) (*Group, error) {
	node, err := device.NewNode(device.NodeConfig{Devices: cfg.World, SMs: cfg.SMs, Fabric: cfg.Fabric})
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
		s, err := c.Rank(r).Device().NewStream("compute", 0)
		if err != nil {
			_ = g.Close()
			return nil, fmt.Errorf("tp: rank %d: %w", r, err)
		}
		g.compute = append(g.compute, s)
	}
	return g, nil
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

// Synchronize waits for every rank's compute stream and returns their errors.
func (g *Group) Synchronize() error {
	return g.Run(func(r int) error { return g.compute[r].Synchronize() })
}

// Close frees the communicator's buffers and stops the node's streams.
func (g *Group) Close() error {
	return errors.Join(g.comm.Close(), g.node.Close())
}
