package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tpslice/tpslice/chart"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/perf"
	"github.com/tpslice/tpslice/topo"
)

// planReport is plan's --json output.
type planReport struct {
	HW          string    `json:"hw"`
	Model       string    `json:"model"`
	Context     int       `json:"context"`
	WeightDType string    `json:"weight_dtype"`
	KVDType     string    `json:"kv_dtype"`
	Collectives string    `json:"collectives"`
	Graphs      bool      `json:"graphs"`
	Rows        []planRow `json:"rows"`
}

type planRow struct {
	TP             int     `json:"tp"`
	Hosts          int     `json:"hosts,omitempty"` // the TP ranks span this many hosts (--hosts)
	Batch          int     `json:"batch"`
	TokenLatencyMS float64 `json:"token_latency_ms"`
	TokensPerSec   float64 `json:"tokens_per_s"`
	Fits           bool    `json:"fits"`
	WeightGB       float64 `json:"weight_gb_per_gpu"`
	KVGB           float64 `json:"kv_gb_per_gpu"`
	CommShare      float64 `json:"comm_share"`
	// AllReduce maps each collective call site ("after o_proj") to what it runs.
	AllReduce   map[string]planSite `json:"allreduce"`
	BreakdownMS map[string]float64  `json:"breakdown_ms"`
}

type planSite struct {
	perf.Site
	MS float64 `json:"ms"`
	// Share is of the step's kernel time (perf.Prediction.Busy), as comm_share is.
	Share float64 `json:"share"`
}

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
	fs.Var(dtypeFlag{&kvDType}, "kv-dtype", "KV cache dtype: f32, bf16 or f16 (default: the weights', bf16 for quantized weights)")
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
	rep := planReportOf(base, preds)
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
	return printPlan(stdout, base, rep, preds)
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

func planReportOf(base perf.Config, preds []perf.Prediction) planReport {
	rep := planReport{HW: base.Profile.Name, Model: base.Model.Name, Collectives: base.Collectives.String(), Graphs: !base.Eager}
	for _, p := range preds {
		rep.Context, rep.WeightDType, rep.KVDType = p.Config.Context, p.Config.WeightDType.String(), p.Config.KVDType.String()
		row := planRow{TP: p.Config.TP, Hosts: p.Config.Hosts, Batch: p.Config.Batch, TokenLatencyMS: ms(p.Step), TokensPerSec: p.TokensPerSec,
			Fits: p.Fits, WeightGB: float64(p.WeightBytes) / 1e9, KVGB: float64(p.KVBytes) / 1e9, CommShare: p.CommShare,
			AllReduce: map[string]planSite{}, BreakdownMS: map[string]float64{}}
		for _, s := range p.Sites {
			row.AllReduce["after "+s.After] = planSite{Site: s, MS: ms(s.Time), Share: float64(s.Time) / float64(p.Busy())}
		}
		for class, d := range p.ByClass {
			row.BreakdownMS[string(class)] = ms(d)
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep
}

func printPlan(w io.Writer, base perf.Config, rep planReport, preds []perf.Prediction) error {
	p := base.Profile
	launch := "graph replays"
	if base.Eager {
		launch = "eager launches"
	}
	collectives := rep.Collectives + " collectives"
	if base.AllReduceWire != comm.WireExact {
		collectives += " on the " + base.AllReduceWire.String() + " all-reduce wire"
	}
	fmt.Fprintf(w, "# %s on %s (%s, %s fabric, NVLS %v): predicted decode step, %s weights, %s KV cache, context %d, %s, %s\n",
		rep.Model, p.Name, p.GPU, p.Fabric, p.NVLS, rep.WeightDType, rep.KVDType, rep.Context, launch, collectives)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TP\tbatch\ttoken ms\ttokens/s\tfits\tweights GB/GPU\tKV GB/GPU\tcomm share\tall-reduce per call site\t")
	for i, r := range rep.Rows {
		fits := "yes"
		if !r.Fits {
			fits = "NO"
		}
		var sites []string
		for _, s := range preds[i].Sites {
			algo := s.Algo
			if s.Op == device.OpReduceScatterRMSNormAllGather {
				algo = fused.SeqParallel.String() // a direct reduce-scatter and all-gather
			}
			sites = append(sites, fmt.Sprintf("%s:%s %.0f%%", s.After, algo, 100*float64(s.Time)/float64(preds[i].Busy())))
		}
		if len(sites) == 0 {
			sites = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.1f\t%s\t%.2f\t%.2f\t%.2f\t%s\t\n", tpLabel(r), r.Batch, r.TokenLatencyMS, r.TokensPerSec,
			fits, r.WeightGB, r.KVGB, r.CommShare, strings.Join(sites, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, b := range batchesOf(rep) {
		best := perf.Fastest(preds, b, nil)
		if best < 0 {
			fmt.Fprintf(w, "batch %d: no TP degree fits %s's memory\n", b, p.GPU)
			continue
		}
		fmt.Fprintf(w, "batch %d: lowest latency at TP %s (%.3f ms per token)\n", b, tpLabel(rep.Rows[best]), rep.Rows[best].TokenLatencyMS)
	}
	printHostsVerdict(w, rep, preds)
	fmt.Fprintf(w, "roofline: %.0f%% of HBM bandwidth, %.0f%% of dense BF16 peak; kernel fixed %v, graph node %v, eager launch %v (perf, hw)\n",
		100*perf.MemoryEfficiency, 100*perf.ComputeEfficiency, p.KernelFixed, p.LaunchGraph, p.LaunchEager)
	coll := fmt.Sprintf("idealised α-β model, α = %v per step at %.0f GB/s", p.Alpha, p.LinkBytesPerSec/1e9)
	if p.Calibration != nil {
		coll = "calibrated, " + p.Calibration.Basis
	}
	if rowsSpanHosts(rep) {
		coll += fmt.Sprintf("; between hosts %.0f GB/s and %v per exchange per GPU (hw InterHost)", p.InterHost.BytesPerSec/1e9, p.InterHost.Latency)
	}
	_, err := fmt.Fprintf(w, "collectives: %s (perf, hw)\n", coll)
	return err
}

func batchesOf(rep planReport) []int {
	var out []int
	seen := map[int]bool{}
	for _, r := range rep.Rows {
		if !seen[r.Batch] {
			seen[r.Batch] = true
			out = append(out, r.Batch)
		}
	}
	return out
}

// plotPlan writes latency against TP degree per batch size, and the stacked breakdown of
// each row's kernel time by class.
func plotPlan(dir string, rep planReport) error {
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
