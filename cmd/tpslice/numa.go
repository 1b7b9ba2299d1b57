package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/perf"
)

// numaCmd predicts what placing a rank per NUMA node buys a memory-bound decode step on a
// two-socket server (perf.PriceNUMA): the step's weight reads under each placement, with
// the resource that bounds it.
func numaCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("numa", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, s := range hw.TwoSockets() {
		names = append(names, s.Name)
	}
	server := fs.String("server", names[0], "the two-socket server: "+strings.Join(names, ", "))
	model := fs.String("model", "medium", "a preset or a GGUF file / Hugging Face directory (its config)")
	tps := fs.String("tp", "2", "TP degrees, comma-separated")
	dt := fs.String("dtype", "bf16", "weight dtype: f32, bf16 or f16")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("numa: unexpected argument %q", fs.Arg(0))
	}
	s, err := hw.LookupTwoSocket(*server)
	if err != nil {
		return fmt.Errorf("numa: --server: %w", err)
	}
	cfg, err := engine.LoadConfig(*model)
	if err != nil {
		return fmt.Errorf("numa: --model %q: %w", *model, err)
	}
	t, err := dtype.ParseScalar(*dt)
	if err != nil {
		return fmt.Errorf("numa: --dtype: %w", err)
	}
	tpList, err := parseIntList("tp", *tps, 1, device.MaxDevices)
	if err != nil {
		return fmt.Errorf("numa: %w", err)
	}
	weights := cfg.WeightBytes(t)
	fmt.Fprintf(stdout, "%s: %.0fM parameters in %v, %.2f GB of weights read a decode step, split evenly over the ranks\n",
		cfg.Name, float64(cfg.ParamCount())/1e6, t, float64(weights)/1e9)
	fmt.Fprintf(stdout, "%s: %.1f GB/s of DRAM a socket, %.1f GB/s a direction between the sockets (peaks: %s)\n",
		s.CPU, s.MemBytesPerSec/1e9, s.LinkBytesPerSec/1e9, s.Source)
	fmt.Fprintln(stdout, "a prediction of the weight reads alone (perf.PriceNUMA), not a measurement")
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TP\tplacement\tstep\ttokens/s at batch 1\tvs a rank a node\tbound by")
	for _, n := range tpList {
		var perNode perf.NUMAStep
		for _, p := range perf.NUMAPlacements {
			step, err := perf.PriceNUMA(s, n, weights/int64(n), p)
			if err != nil {
				return fmt.Errorf("numa: %w", err)
			}
			if p == perf.PerNode {
				perNode = step
			}
			fmt.Fprintf(tw, "%d\t%v\t%.2f ms\t%.0f\t%.2f×\t%s\n", n, p, float64(step.Time.Microseconds())/1e3,
				1/step.Time.Seconds(), step.Time.Seconds()/perNode.Time.Seconds(), step.Bound)
		}
	}
	return tw.Flush()
}
