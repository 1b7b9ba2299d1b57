package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/topo"
)

// topologyUsage documents --topology for every command that takes it.
func topologyUsage() string {
	return fmt.Sprintf("the node's GPU topology: %s (NVML, else a simulated nvswitch node), a fabric (%s) or a hw profile (%s)",
		topo.Auto, strings.Join(topo.Fabrics(), ", "), strings.Join(hw.Names(), ", "))
}

// topoCmd prints the node's GPUs and how they connect, as nvidia-smi topo -m does, with
// the fabric and hw profile tpslice derives from them, then this machine's NUMA nodes and
// where a rank a GPU runs (--cpu-affinity), as nvidia-smi's CPU and NUMA affinity columns.
func topoCmd(args []string, stdout, stderr io.Writer) error {
	var (
		spec   string
		gpus   int
		asJSON bool
		aff    topo.Affinity
	)
	fs := flag.NewFlagSet("topo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	topologyFlag(fs, &spec)
	fs.IntVar(&gpus, "gpus", device.MaxDevices, "GPUs of a simulated topology")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object instead of the matrix")
	cpuAffinityFlag(fs, &aff)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("topo: unexpected argument %q", fs.Arg(0))
	}
	t, err := topo.Detect(spec, gpus)
	if err != nil {
		return err // already "topo: …", naming the bad spec or GPU count
	}
	if note := t.Note(); note != "" {
		fmt.Fprintln(stderr, "tpslice:", note)
	}
	m, err := topo.DetectMachine()
	if err != nil {
		return fmt.Errorf("topo: %w", err)
	}
	placement, err := topo.Place(m, len(t.GPUs), aff)
	if err != nil {
		return fmt.Errorf("--cpu-affinity: %w", err)
	}
	if !asJSON {
		if err := t.Render(stdout); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
		if err := m.Render(stdout); err != nil {
			return err
		}
		return placement.Render(stdout)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(topo.NewReport(t, m, placement))
}

// resolveFabric is the interconnect generate and serve simulate for tp ranks: the node's
// own where NVML reads it, else the simulated one spec names; the reason a topology is
// simulated goes to stderr in one line.
func resolveFabric(spec string, tp int, stderr io.Writer) (device.Fabric, error) {
	// The engine reports a bad --tp itself; the topology needs only a count it can build.
	t, err := topo.Detect(spec, min(max(tp, 1), device.MaxDevices))
	if err != nil {
		return 0, fmt.Errorf("--topology: %w", err)
	}
	if note := t.Note(); note != "" {
		fmt.Fprintln(stderr, "tpslice:", note)
	}
	return t.Fabric(), nil
}
