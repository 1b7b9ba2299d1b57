package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

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
	dt := fs.String("dtype", "bf16", "weight dtype: "+dtype.Names(dtype.DType.Scalar))
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
	if err := perf.WriteNUMATable(stdout, s, cfg, t, tpList); err != nil {
		return fmt.Errorf("numa: %w", err)
	}
	return nil
}
