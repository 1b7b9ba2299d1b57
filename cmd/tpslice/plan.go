package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tpslice/tpslice/chart"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/perf"
	"github.com/tpslice/tpslice/topo"
)

// plan predicts per-token decode latency on a GPU node from the decode graph the engine
// would capture (perf): per TP degree and batch, with the algorithm at each call site,
// memory fit and the fastest TP degree.
func plan(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hwName := fs.String("hw", "h100-sxm", "hardware profile: "+strings.Join(hw.Names(), ", ")+" (PROFILE"+hw.IdealSuffix+": the idealised α-β collectives), or auto (this node's GPUs, from NVML)")
	model := fs.String("model", "llama-3-70b", "a preset ("+strings.Join(models.Presets(), ", ")+") or a GGUF file / Hugging Face directory (its config)")
	tps := fs.String("tp", "1,2,4,8", "TP degrees, comma-separated (with --hosts 2 also 16)")
	hosts := fs.Int("hosts", 1, "hosts of the profile's node, InfiniBand between them (hw InterHost): a TP degree above 8 spans ⌈TP/8⌉ hosts, and a verdict says whether that beats TP inside one host")
	batches := fs.String("batch", "1,8,32", "decode batch sizes, comma-separated")
	context := fs.Int("context", 0, "positions each sequence attends to (0: 512, or the model's context if shorter)")
	dt := fs.String("dtype", "bf16", "weight dtype: "+dtype.Names(dtype.DType.Scalar)+", or a GGML block type priced at its bits per weight: "+dtype.Names(dtype.DType.Quantized))
	var kvDType dtype.DType
	fs.Var(dtypeFlag{&kvDType}, "kv-dtype", "KV cache dtype: "+dtype.Names(dtype.DType.Scalar)+" (default: the weights', bf16 for quantized weights)")
	coll := fs.String("collectives", "tpslice", "whose all-reduce to price: tpslice (custom one-shot/two-shot/NVLS) or nccl (ring with the fastest of LL, LL128, Simple)")
	var collectives collectiveFlags
	collectives.register(fs)
	eager := fs.Bool("eager", false, "price eager launches instead of graph replays")
	overlap := fs.Bool("overlap", false, "two micro-batches, collectives on a comm stream (batches of 2 or more)")
	var wire comm.Wire
	addWireFlag(fs, &wire)
	asJSON := fs.Bool("json", false, "print JSON instead of the table")
	plotDir := fs.String("plot", "", "write latency_vs_tp.png and breakdown.png to this directory")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("plan: unexpected argument %q", fs.Arg(0))
	}
	base, err := planConfig(*hwName, *model, *dt, *coll, collectives, stderr)
	if err != nil {
		return err
	}
	base.Context, base.Eager, base.Overlap, base.KVDType, base.AllReduceWire = *context, *eager, *overlap, kvDType, wire
	tpList, err := planTPs(fs, *tps, *hosts)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	batchList, err := parseIntList("batch", *batches, 1, perf.MaxBatch)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	preds, err := perf.Sweep(base, tpList, batchList)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	rep := perf.NewPlan(base, preds)
	if *plotDir != "" {
		if err := writableDir(*plotDir); err != nil {
			return fmt.Errorf("plan: --plot %s: %w", *plotDir, err)
		}
		if err := plotPlan(*plotDir, rep); err != nil {
			return fmt.Errorf("plan: --plot %s: %w", *plotDir, err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteTable(stdout)
}

func planConfig(hwName, model, dt, coll string, collectives collectiveFlags, stderr io.Writer) (perf.Config, error) {
	var c perf.Config
	var err error
	if c.Profile, err = planProfile(hwName, stderr); err != nil {
		return c, fmt.Errorf("plan: --hw: %w", err)
	}
	if c.Model, err = engine.LoadConfig(model); err != nil {
		return c, fmt.Errorf("plan: --model %q: %w", model, err)
	}
	if c.WeightDType, err = dtype.Parse(dt); err != nil {
		return c, fmt.Errorf("plan: --dtype: %w", err)
	}
	if c.Collectives, err = perf.ParseCollectives(coll); err != nil {
		return c, fmt.Errorf("plan: --collectives: %w", err)
	}
	if c.Algo, c.Fused, err = collectives.parse(); err != nil {
		return c, fmt.Errorf("plan: %w", err)
	}
	return c, nil
}

// planProfile looks a profile up by name, or with "auto" maps this node's GPUs (NVML) to
// one; without NVML there is no node to describe, and auto says so.
func planProfile(name string, stderr io.Writer) (hw.Profile, error) {
	if !strings.EqualFold(strings.TrimSpace(name), topo.Auto) {
		return hw.Lookup(name)
	}
	t, err := topo.Detect(topo.Auto, device.MaxDevices)
	if err != nil {
		return hw.Profile{}, err
	}
	if note := t.Note(); note != "" {
		return hw.Profile{}, fmt.Errorf("auto needs this node's GPUs, but %s; name a profile (%s)", strings.SplitN(note, ";", 2)[0], strings.Join(hw.Names(), ", "))
	}
	p, ok := t.Profile()
	if !ok {
		return hw.Profile{}, fmt.Errorf("auto: no profile describes %s; name the closest (%s)", t.GPUs[0].Name, strings.Join(hw.Names(), ", "))
	}
	fmt.Fprintf(stderr, "tpslice: this node's %d × %s map to the %s profile\n", len(t.GPUs), t.GPUs[0].Name, p.Name)
	return p, nil
}

// plotPlan writes latency against TP degree per batch size, and the stacked breakdown of
// each row's kernel time by class.
func plotPlan(dir string, rep perf.Plan) error {
	var points []chart.TPPoint
	var keys []string
	for _, r := range rep.Rows {
		points = append(points, chart.TPPoint{TP: r.TP, Batch: r.Batch, Latency: r.TokenLatencyMS, Breakdown: r.BreakdownMS})
		for class := range r.BreakdownMS {
			if !slices.Contains(keys, class) {
				keys = append(keys, class)
			}
		}
	}
	slices.Sort(keys)
	return chart.TPSweep(dir, fmt.Sprintf("%s on %s (predicted)", rep.Model, rep.HW), points, keys)
}
