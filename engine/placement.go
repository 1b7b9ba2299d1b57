package engine

import (
	"fmt"

	"github.com/tpslice/tpslice/topo"
)

// place plans where the ranks run (Config.CPUAffinity) on this machine's NUMA nodes. Where
// the machine cannot be read (a system without sched_getaffinity), the automatic plan pins
// nothing and says why; explicit CPU lists there are an error.
func place(cfg Config) (topo.Placement, error) {
	m, err := topo.DetectMachine()
	if err != nil {
		if cfg.CPUAffinity.Lists != nil {
			return topo.Placement{}, fmt.Errorf("engine: CPU affinity %v: %w", cfg.CPUAffinity, err)
		}
		return topo.Placement{Affinity: cfg.CPUAffinity, Notes: []string{"not pinned: " + err.Error()}}, nil
	}
	p, err := topo.Place(m, cfg.TP, cfg.CPUAffinity)
	if err != nil {
		return topo.Placement{}, fmt.Errorf("engine: %w", err)
	}
	return p, nil
}

// Placement returns where the ranks run: each rank's NUMA node and CPUs, and whether they
// are pinned there.
func (e *Engine) Placement() topo.Placement { return e.placement }
