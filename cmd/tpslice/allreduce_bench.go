package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/perf"
)

// benchReport is allreduce-bench's --json output (documented in the README).
type benchReport struct {
	Ranks    int        `json:"ranks"`
	DType    string     `json:"dtype"`
	Wire     string     `json:"wire,omitempty"`  // --allreduce-dtype, when not exact
	Source   string     `json:"source"`          // "measured" or "model:PROFILE"
	Model    string     `json:"model,omitempty"` // what the model's constants rest on (model output only)
	Fabric   string     `json:"fabric,omitempty"`
	Selector string     `json:"selector,omitempty"` // where auto's choices come from
	NVLS     string     `json:"nvls,omitempty"`     // "emulated" when measured on the CPU runtime
	Rows     []benchRow `json:"rows"`
}

type benchRow struct {
	SizeBytes int64         `json:"size_bytes"`
	Count     int           `json:"count"`
	Auto      string        `json:"auto"`
	Results   []benchResult `json:"results"`
	// FastestWithoutNVLS is the model's fastest peer-buffer algorithm (model output only),
	// DESIGN.md's "fastest without NVLS" column.
	FastestWithoutNVLS string `json:"fastest_without_nvls,omitempty"`
	// NCCL is the protocol NCCL's tuner picks for its ring: the fastest (model output only).
	NCCL string `json:"nccl,omitempty"`
}

type benchResult struct {
	Algo      string  `json:"algo"`
	TimeUS    float64 `json:"time_us"`
	AlgBWGBps float64 `json:"algbw_gbps"`
	BusBWGBps float64 `json:"busbw_gbps"`
	Wrong     *int    `json:"wrong,omitempty"` // with --check only
	// Error is the distance to the exact wire's result (--check with --allreduce-dtype).
	Error *comm.WireError `json:"error,omitempty"`
}

type benchOptions struct {
	ranks, factor, iters, warmup, rounds, sms int
	begin, end, buffer                        sizeFlag
	target, budget                            time.Duration
	dtypeName, algos, model, fabric, selector string
	tuneCache                                 string
	check, asJSON                             bool
	timeout                                   time.Duration
	wire                                      comm.Wire
}

func allreduceBench(args []string, stdout, stderr io.Writer) error {
	o := benchOptions{begin: 8, end: 64 << 20, buffer: comm.DefaultBufferBytes}
	fs := flag.NewFlagSet("allreduce-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, name := range []string{"g", "ranks"} {
		fs.IntVar(&o.ranks, name, 8, "number of ranks (devices), 1 to 8")
	}
	for _, name := range []string{"b", "begin"} {
		fs.Var(&o.begin, name, "smallest message size per rank, in bytes (8, 64K, 1M, …)")
	}
	for _, name := range []string{"e", "end"} {
		fs.Var(&o.end, name, "largest message size per rank, in bytes")
	}
	for _, name := range []string{"f", "factor"} {
		fs.IntVar(&o.factor, name, 2, "multiply the size by this much between rows")
	}
	fs.StringVar(&o.dtypeName, "dtype", "f32", "element type: f32 or bf16")
	fs.StringVar(&o.algos, "algo", "all", "ring, oneshot, twoshot, nvls, lamport, tree, auto, all, or a comma-separated list")
	fs.IntVar(&o.iters, "iters", 1, "timed calls per round, at least")
	fs.DurationVar(&o.target, "target", time.Millisecond, "wall time per round, at least (more calls for small messages)")
	fs.IntVar(&o.rounds, "rounds", 100, "interleaved rounds, at most; each algorithm keeps its best round")
	fs.DurationVar(&o.budget, "budget", 2*time.Second, "wall time per algorithm and size, at most (fewer rounds for slow ones; one call at least)")
	fs.IntVar(&o.warmup, "warmup", 5, "untimed calls before the first round")
	fs.BoolVar(&o.check, "check", false, "count wrong elements against a float64 reference")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object instead of the table")
	fs.StringVar(&o.model, "model", "", "print the cost model's table for a hardware profile ("+strings.Join(hw.Names(), ", ")+"; PROFILE"+hw.IdealSuffix+" for the idealised α-β model) instead of measuring")
	fs.StringVar(&o.fabric, "fabric", "nvswitch", "simulated interconnect: nvswitch (offers NVLS), nvlink or pcie")
	fs.IntVar(&o.sms, "sms", 0, "SMs per device (0: GOMAXPROCS)")
	fs.Var(&o.buffer, "buffer", "registered peer buffer per rank; larger messages run in chunks")
	fs.StringVar(&o.selector, "select", "tuned", "how auto picks: tuned (measure once, cache), default (vLLM's rule), or model:PROFILE")
	fs.StringVar(&o.tuneCache, "tune-cache", "", "autotuning cache file (default: the user cache directory)")
	fs.DurationVar(&o.timeout, "timeout", comm.DefaultTimeout, "deadline of every wait on a peer")
	addWireFlag(fs, &o.wire)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("allreduce-bench: unexpected argument %q", fs.Arg(0))
	}
	t, err := dtype.ParseScalar(o.dtypeName)
	if err != nil {
		return fmt.Errorf("allreduce-bench: --dtype: %w", err)
	}
	if t == dtype.F16 {
		return errors.New("allreduce-bench: --dtype: f16 all-reduce is not benchmarked; use f32 or bf16")
	}
	sizes, err := benchSizes(int64(o.begin), int64(o.end), o.factor, t)
	if err != nil {
		return fmt.Errorf("allreduce-bench: %w", err)
	}
	if o.ranks < 1 || o.ranks > device.MaxDevices {
		return fmt.Errorf("allreduce-bench: --ranks: want 1 to %d, got %d", device.MaxDevices, o.ranks)
	}
	var report *benchReport
	if o.model != "" {
		report, err = modelReport(o, t, sizes)
	} else {
		report, err = measureReport(o, t, sizes, stderr)
	}
	if err != nil {
		return fmt.Errorf("allreduce-bench: %w", err)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return printReport(stdout, report)
}

// benchSizes lists the message sizes from begin to end, multiplying by factor, each a whole
// number of elements.
func benchSizes(begin, end int64, factor int, t dtype.DType) ([]int64, error) {
	es := int64(t.Size())
	switch {
	case factor < 2:
		return nil, fmt.Errorf("--factor: want at least 2, got %d", factor)
	case begin < es:
		return nil, fmt.Errorf("--begin: %d bytes is less than one %v element", begin, t)
	case end < begin:
		return nil, fmt.Errorf("--end (%d) is smaller than --begin (%d)", end, begin)
	}
	var sizes []int64
	for s := begin; s <= end; s *= int64(factor) {
		sizes = append(sizes, s/es*es)
	}
	return sizes, nil
}

// parseAlgos reads --algo; "all" lists every algorithm the fabric offers, then auto.
func parseAlgos(spec string, fabric device.Fabric) ([]comm.Algo, error) {
	if spec == "all" {
		var out []comm.Algo
		for _, a := range comm.Algos {
			if a != comm.NVLS || fabric.HasMulticast() {
				out = append(out, a)
			}
		}
		return append(out, comm.Auto), nil
	}
	var out []comm.Algo
	for _, name := range strings.Split(spec, ",") {
		a, err := comm.ParseAlgo(name)
		if err != nil {
			return nil, fmt.Errorf("--algo: %w", err)
		}
		if a == comm.NVLS && !fabric.HasMulticast() {
			return nil, fmt.Errorf("--algo: nvls needs the nvswitch fabric, not %v", fabric)
		}
		out = append(out, a)
	}
	return out, nil
}

func measureReport(o benchOptions, t dtype.DType, sizes []int64, stderr io.Writer) (*benchReport, error) {
	fabric, err := device.ParseFabric(o.fabric)
	if err != nil {
		return nil, fmt.Errorf("--fabric: %w", err)
	}
	algos, err := parseAlgos(o.algos, fabric)
	if err == nil {
		algos, err = wireAlgos(algos, o)
	}
	if err != nil {
		return nil, err
	}
	if o.iters < 1 || o.warmup < 0 || o.rounds < 1 || o.target < 0 || o.budget < 0 {
		return nil, fmt.Errorf("--iters and --rounds must be at least 1, --warmup, --target and --budget not negative (got %d, %d, %d, %v, %v)",
			o.iters, o.rounds, o.warmup, o.target, o.budget)
	}
	node, err := device.NewNode(device.NodeConfig{Devices: o.ranks, SMs: o.sms, Fabric: fabric})
	if err != nil {
		return nil, err
	}
	defer node.Close()
	c, err := comm.New(node, comm.Config{BufferBytes: int(o.buffer), Timeout: o.timeout, Wire: o.wire})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	streams := make([]*device.Stream, o.ranks)
	for r := range streams {
		if streams[r], err = c.Rank(r).Device().NewStream("comm", 0); err != nil {
			return nil, err
		}
	}
	report := &benchReport{Ranks: o.ranks, DType: t.String(), Source: "measured", Fabric: fabric.String(), Wire: wireName(o.wire)}
	if fabric.HasMulticast() {
		report.NVLS = "emulated"
	}
	if report.Selector, err = chooseSelector(o, c, streams, t, sizes, stderr); err != nil {
		return nil, err
	}

	maxCount := int(sizes[len(sizes)-1]) / t.Size()
	ins, outs := make([]*device.Buffer, o.ranks), make([]*device.Buffer, o.ranks)
	for r := range ins {
		dev := c.Rank(r).Device()
		if ins[r], err = dev.Alloc(t, maxCount); err != nil {
			return nil, err
		}
		if outs[r], err = dev.Alloc(t, maxCount); err != nil {
			return nil, err
		}
	}
	for _, size := range sizes {
		count := int(size) / t.Size()
		comm.Fill(ins, count, uint64(size))
		row := benchRow{SizeBytes: size, Count: count, Auto: c.Pick(c.MessageBytes(count, t)).String()}
		wrong, errs := make([]int, len(algos)), make([]comm.WireError, len(algos))
		var check func(i int) error
		switch {
		case o.check && o.wire != comm.WireExact:
			check = func(i int) error { errs[i] = comm.CompareExact(ins, outs, count); return nil }
		case o.check:
			check = func(i int) error { wrong[i] = comm.CountWrong(ins, outs, count); return nil }
		}
		best, err := c.Measure(streams, algos, ins, outs, count, comm.MeasureOptions{
			Warmup: o.warmup, MinIters: o.iters, Target: o.target, Budget: o.budget, Rounds: o.rounds,
		}, check)
		if err != nil {
			return nil, err
		}
		for i, a := range algos {
			res := benchResult{Algo: a.String(), TimeUS: float64(best[i].Nanoseconds()) / 1e3}
			algbw := float64(size) / best[i].Seconds() / 1e9
			res.AlgBWGBps, res.BusBWGBps = algbw, comm.BusBW(algbw, o.ranks)
			switch {
			case o.check && o.wire != comm.WireExact:
				res.Error = &errs[i]
			case o.check:
				res.Wrong = &wrong[i]
			}
			row.Results = append(row.Results, res)
		}
		report.Rows = append(report.Rows, row)
	}
	return report, nil
}

// chooseSelector installs the table Auto consults and says where it came from.
func chooseSelector(o benchOptions, c *comm.Communicator, streams []*device.Stream, t dtype.DType, sizes []int64, stderr io.Writer) (string, error) {
	switch {
	case o.selector == "default":
		return "default: vLLM's rule (one-shot below 256-512 KiB, two-shot above; ring on PCIe beyond 2 GPUs)", nil
	case strings.HasPrefix(o.selector, "model:"):
		p, err := hw.Lookup(strings.TrimPrefix(o.selector, "model:"))
		if err != nil {
			return "", fmt.Errorf("--select: %w", err)
		}
		c.SetTable(perf.ModelTable(p, []int{c.Size()}, sizes[len(sizes)-1]))
		return "model:" + p.Name, nil
	case o.selector != "tuned":
		return "", fmt.Errorf("--select: want tuned, default or model:PROFILE, got %q", o.selector)
	}
	path := o.tuneCache
	if path == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("--tune-cache: no user cache directory (%w); give a file", err)
		}
		path = filepath.Join(dir, "tpslice", fmt.Sprintf("allreduce-tune-n%d-%v-%v.json", c.Size(), o.fabric, t))
	}
	start := time.Now()
	opts := comm.TuneOptions{DType: t, MinBytes: sizes[0], MaxBytes: sizes[len(sizes)-1],
		Measure: comm.MeasureOptions{Target: time.Millisecond, Rounds: 50, Budget: 500 * time.Millisecond}}
	if isTerminal(stderr) {
		opts.Progress = func(done, total int) { fmt.Fprintf(stderr, "\r# autotuning auto's table: %d/%d sizes", done, total) }
	}
	table, fresh, err := c.TunedTable(path, streams, opts)
	if fresh {
		fmt.Fprintf(stderr, "\r# autotuned auto's table for %d sizes in %.1fs, cached in %s\n", len(table.Rows), time.Since(start).Seconds(), path)
	}
	if err != nil && table == nil {
		return "", err
	}
	if err != nil {
		fmt.Fprintf(stderr, "# warning: %v\n", err)
	}
	c.SetTable(table)
	return "tuned (" + path + ")", nil
}

// modelReport prices every size with every algorithm the profile offers (tpslice's, then
// NCCL's ring with each protocol the profile models), as perf's collective model has them.
func modelReport(o benchOptions, t dtype.DType, sizes []int64) (*benchReport, error) {
	p, err := hw.Lookup(o.model)
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	if o.wire != comm.WireExact {
		return wireModelReport(o, p, t, sizes)
	}
	n := o.ranks
	report := &benchReport{Ranks: n, DType: t.String(), Source: "model:" + p.Name, Fabric: p.Fabric.String(),
		Model: "idealised α-β model (one α per step, full link bandwidth)"}
	if p.Calibration != nil {
		report.Model = "calibrated: " + p.Calibration.Basis
	}
	table := perf.ModelTable(p, []int{n}, sizes[len(sizes)-1])
	for _, s := range sizes {
		auto, _ := table.Pick(n, s)
		row := benchRow{SizeBytes: s, Count: int(s) / t.Size(), Auto: auto.String()}
		var best time.Duration
		for _, a := range perf.Offered(p, n) {
			d, err := perf.CollectiveTime(p, device.OpAllReduce, a, n, s)
			if err != nil {
				return nil, err
			}
			row.Results = append(row.Results, modelResult(a.String(), s, d, n))
			// ties: the later (one-shot over ring), but not the tree, which ties one-shot at n = 3
			if a != comm.NVLS && (row.FastestWithoutNVLS == "" || d < best || d == best && a != comm.Tree) {
				row.FastestWithoutNVLS, best = a.String(), d
			}
		}
		for _, proto := range perf.Protocols {
			if d, ok := perf.NCCLTime(p, device.OpAllReduce, proto, n, s); ok {
				row.Results = append(row.Results, modelResult("nccl "+proto.String(), s, d, n))
			}
		}
		_, proto := perf.NCCLFastest(p, device.OpAllReduce, n, s)
		row.NCCL = proto.String()
		report.Rows = append(report.Rows, row)
	}
	return report, nil
}

func modelResult(name string, size int64, d time.Duration, n int) benchResult {
	r := benchResult{Algo: name, TimeUS: float64(d.Nanoseconds()) / 1e3}
	if d > 0 {
		algbw := float64(size) / d.Seconds() / 1e9
		r.AlgBWGBps, r.BusBWGBps = algbw, comm.BusBW(algbw, n)
	}
	return r
}

func printReport(w io.Writer, r *benchReport) error {
	fmt.Fprintf(w, "# tpslice allreduce-bench: %d ranks, %s, %s", r.Ranks, r.DType, r.Source)
	if r.Source == "measured" {
		fmt.Fprintf(w, " on the CPU device runtime (%s fabric", r.Fabric)
		if r.NVLS != "" {
			fmt.Fprintf(w, "; nvls is %s: the multicast object sums in software", r.NVLS)
		}
		fmt.Fprintf(w, ")\n# auto: %s\n", r.Selector)
	} else {
		fmt.Fprintf(w, " (%s fabric)\n# %s; nccl X: NCCL's ring with protocol X\n", r.Fabric, r.Model)
	}
	fmt.Fprintln(w, "# time in µs; algbw = size/time and busbw = algbw·2(n-1)/n in GB/s")
	wrongHead := "#wrong"
	switch {
	case r.Wire != "":
		fmt.Fprintf(w, "# wire: %s (%s); size, algbw and busbw count the %s bytes, not the wire's\n", r.Wire, wireUsageOf(r.Wire), r.DType)
		if r.Source == "measured" {
			wrongHead = "maxrel"
			fmt.Fprintln(w, "# maxrel: largest relative error against the exact wire's result, of elements of at least its RMS (--check; - without it)")
		}
	case r.Source == "measured":
		fmt.Fprintln(w, "# #wrong: elements off the float64 reference or differing between ranks (--check; - without it)")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	if len(r.Rows) == 0 {
		return nil
	}
	measured := r.Source == "measured"
	head := "size\tcount\ttype\tauto\t"
	if !measured {
		head += "w/o nvls\tnccl\t"
	}
	for _, res := range r.Rows[0].Results {
		head += "|\t" + res.Algo + "\talgbw\tbusbw\t"
		if measured {
			head += wrongHead + "\t"
		}
	}
	fmt.Fprintln(tw, head)
	for _, row := range r.Rows {
		line := fmt.Sprintf("%d\t%d\t%s\t%s\t", row.SizeBytes, row.Count, r.DType, row.Auto)
		if !measured {
			line += row.FastestWithoutNVLS + "\t" + row.NCCL + "\t"
		}
		for _, res := range row.Results {
			line += fmt.Sprintf("|\t%.1f\t%.2f\t%.2f\t", res.TimeUS, res.AlgBWGBps, res.BusBWGBps)
			if measured {
				wrong := "-"
				if res.Wrong != nil {
					wrong = fmt.Sprint(*res.Wrong)
				}
				if res.Error != nil {
					wrong = fmt.Sprintf("%.2g", res.Error.MaxRel)
				}
				line += wrong + "\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// isTerminal reports whether w is a terminal, where progress may redraw its line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
