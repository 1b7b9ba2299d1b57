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

	"github.com/tpslice/tpslice/bench"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/perf"
)

// benchReport is allreduce-bench's --json output (documented in docs/cli.md).
type benchReport struct {
	Op       string     `json:"op"` // allreduce, reducescatter or allgather
	Ranks    int        `json:"ranks"`
	Hosts    int        `json:"hosts,omitempty"` // the ranks split over this many hosts (--hosts > 1)
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
	op                                        string
	protos                                    string
	tuneCache                                 string
	check, asJSON                             bool
	timeout                                   time.Duration
	hosts                                     int // --hosts: the ranks split over this many
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
	fs.IntVar(&o.hosts, "hosts", 1, "split the ranks evenly over this many hosts, InfiniBand between them (measured: an emulated node; --model: the profile's network); adds twolevel")
	fs.StringVar(&o.op, "op", "allreduce", "collective: allreduce, reducescatter or allgather (their size is the whole n·count buffer, as nccl-tests counts it)")
	fs.StringVar(&o.dtypeName, "dtype", "f32", "element type: f32 or bf16")
	fs.StringVar(&o.algos, "algo", "all", "an algorithm ("+comm.AlgoNames(nil)+"), auto, all, or a comma-separated list")
	fs.StringVar(&o.protos, "proto", "all", "protocol of ring and tree: LL, LL128, Simple, auto (the selector's), all, or a comma-separated list")
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
	if err := parseFlagsHelp(fs, args, "usage: tpslice allreduce-bench [flags]\n\n"+algoHelp()); err != nil {
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
	if o.hosts > 1 {
		if o.ranks < o.hosts || o.ranks%o.hosts != 0 || o.ranks/o.hosts > device.MaxDevices {
			return fmt.Errorf("allreduce-bench: --ranks %d over --hosts %d: want a multiple of %d up to %d", o.ranks, o.hosts, o.hosts, o.hosts*device.MaxDevices)
		}
	} else if o.hosts < 1 {
		return fmt.Errorf("allreduce-bench: --hosts: want at least 1, got %d", o.hosts)
	} else if o.ranks < 1 || o.ranks > device.MaxDevices {
		return fmt.Errorf("allreduce-bench: --ranks: want 1 to %d, got %d", device.MaxDevices, o.ranks)
	}
	op, err := parseBenchOp(o.op, o.ranks)
	if err == nil && o.hosts > 1 && !op.allReduce() {
		err = fmt.Errorf("--op %s over --hosts %d: only the all-reduce is modelled across hosts", op.op, o.hosts)
	}
	if err == nil && o.wire != comm.WireExact && !op.allReduce() {
		err = fmt.Errorf("--op %s: --allreduce-dtype %v is the all-reduce's wire; %s runs exact", op.op, o.wire, op.op)
	}
	if err == nil && o.wire != comm.WireExact && o.model != "" && o.hosts > 1 {
		err = fmt.Errorf("--allreduce-dtype %v with --model and --hosts %d: the wire is not modelled across hosts", o.wire, o.hosts)
	}
	if err == nil {
		sizes, err = op.sizes(sizes, t)
	}
	if err != nil {
		return fmt.Errorf("allreduce-bench: %w", err)
	}
	var report *benchReport
	if o.model != "" {
		report, err = modelReport(o, op, t, sizes)
	} else {
		report, err = measureReport(o, op, t, sizes, stderr)
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

// parseProtos reads --proto; "all" lists every protocol.
func parseProtos(spec string) ([]comm.Proto, error) {
	if spec == "all" {
		return comm.Protos, nil
	}
	var out []comm.Proto
	for _, name := range strings.Split(spec, ",") {
		p, err := comm.ParseProto(name)
		if err != nil {
			return nil, fmt.Errorf("--proto: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// withProtos pairs every algorithm that takes a protocol (ring, tree) with each of protos,
// and every other one with none.
func withProtos(algos []comm.Algo, protos []comm.Proto) []comm.Choice {
	var out []comm.Choice
	for _, a := range algos {
		if !comm.TakesProto(a) {
			out = append(out, comm.Choice{Algo: a})
			continue
		}
		for _, p := range protos {
			out = append(out, comm.Choice{Algo: a, Proto: p})
		}
	}
	return out
}

// parseAlgos reads --algo; "all" lists every algorithm the fabric offers (over hosts,
// without NVLS and with the two-level all-reduce), then auto.
func parseAlgos(spec string, fabric device.Fabric, hosts int) ([]comm.Algo, error) {
	multicast := fabric.HasMulticast() && hosts <= 1
	if spec == "all" {
		var out []comm.Algo
		for _, a := range comm.Algos {
			if a != comm.NVLS || multicast {
				out = append(out, a)
			}
		}
		if hosts > 1 {
			out = append(out, comm.HostAlgos...)
		}
		return append(out, comm.Auto), nil
	}
	var out []comm.Algo
	for _, name := range strings.Split(spec, ",") {
		a, err := comm.ParseAlgo(name)
		if err != nil {
			return nil, fmt.Errorf("--algo: %w", err)
		}
		if a == comm.NVLS && !multicast {
			if hosts > 1 {
				return nil, fmt.Errorf("--algo: nvls needs the nvswitch fabric of one host; multicast does not cross %d hosts", hosts)
			}
			return nil, fmt.Errorf("--algo: nvls needs the nvswitch fabric, not %v", fabric)
		}
		out = append(out, a)
	}
	return out, nil
}

func measureReport(o benchOptions, op benchOp, t dtype.DType, sizes []int64, stderr io.Writer) (*benchReport, error) {
	fabric, err := device.ParseFabric(o.fabric)
	if err != nil {
		return nil, fmt.Errorf("--fabric: %w", err)
	}
	algos, err := op.algos(o.algos, fabric, o.hosts)
	if err == nil && o.wire != comm.WireExact {
		algos, err = wireAlgos(algos, o)
	}
	if err != nil {
		return nil, err
	}
	protos, err := parseProtos(o.protos)
	if err != nil {
		return nil, err
	}
	choices := op.choices(algos, protos)
	if o.iters < 1 || o.warmup < 0 || o.rounds < 1 || o.target < 0 || o.budget < 0 {
		return nil, fmt.Errorf("--iters and --rounds must be at least 1, --warmup, --target and --budget not negative (got %d, %d, %d, %v, %v)",
			o.iters, o.rounds, o.warmup, o.target, o.budget)
	}
	node, err := device.NewNode(device.NodeConfig{Devices: o.ranks, Hosts: o.hosts, SMs: o.sms, Fabric: fabric})
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
	report := &benchReport{Op: string(op.op), Ranks: o.ranks, DType: t.String(), Source: "measured", Fabric: fabric.String(), Wire: wireName(o.wire)}
	if c.Hosts() > 1 {
		report.Hosts = c.Hosts()
	}
	if c.HasNVLS() && op.allReduce() {
		report.NVLS = "emulated"
	}
	report.Selector = "the fabric's rule: oneshot (direct), the ring on PCIe beyond 2 GPUs"
	if op.allReduce() {
		if report.Selector, err = chooseSelector(o, c, streams, t, sizes, stderr); err != nil {
			return nil, err
		}
	}

	inLen, outLen := op.lens(op.perRank(sizes[len(sizes)-1], t))
	ins, outs := make([]*device.Buffer, o.ranks), make([]*device.Buffer, o.ranks)
	for r := range ins {
		dev := c.Rank(r).Device()
		if ins[r], err = dev.Alloc(t, inLen); err != nil {
			return nil, err
		}
		if outs[r], err = dev.Alloc(t, outLen); err != nil {
			return nil, err
		}
	}
	for _, size := range sizes {
		count := op.perRank(size, t)
		inCount, _ := op.lens(count)
		comm.Fill(ins, inCount, uint64(size))
		row := benchRow{SizeBytes: size, Count: int(size) / t.Size(), Auto: op.auto(c, count, t).String()}
		wrong, errs := make([]int, len(choices)), make([]comm.WireError, len(choices))
		var check func(i int) error
		switch {
		case o.check && o.wire != comm.WireExact:
			check = func(i int) error { errs[i] = comm.CompareExact(ins, outs, count); return nil }
		case o.check:
			check = func(i int) error { wrong[i] = op.wrong(ins, outs, count); return nil }
		}
		best, err := c.MeasureChoices(streams, choices, ins, outs, count, comm.MeasureOptions{
			Op: op.op, Warmup: o.warmup, MinIters: o.iters, Target: o.target, Budget: o.budget, Rounds: o.rounds,
		}, check)
		if err != nil {
			return nil, err
		}
		for i, ch := range choices {
			res := benchResult{Algo: ch.String(), TimeUS: float64(best[i].Nanoseconds()) / 1e3}
			algbw := float64(size) / best[i].Seconds() / 1e9
			res.AlgBWGBps, res.BusBWGBps = algbw, comm.OpBusBW(op.op, algbw, o.ranks)
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
	case o.selector == "default" && c.Hosts() > 1:
		return "default: two-level across hosts", nil
	case o.selector == "default":
		return "default: vLLM's rule (one-shot below 256-512 KiB, two-shot above; ring on PCIe beyond 2 GPUs)", nil
	case strings.HasPrefix(o.selector, "model:"):
		p, err := hw.Lookup(strings.TrimPrefix(o.selector, "model:"))
		if err != nil {
			return "", fmt.Errorf("--select: %w", err)
		}
		c.SetTable(perf.ModelTableHosts(p, c.Hosts(), []int{c.Size()}, sizes[len(sizes)-1]))
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
		name := fmt.Sprintf("allreduce-tune-n%d-%v-%v.json", c.Size(), o.fabric, t)
		if c.Hosts() > 1 {
			name = fmt.Sprintf("allreduce-tune-n%d-hosts%d-%v-%v.json", c.Size(), c.Hosts(), o.fabric, t)
		}
		path = filepath.Join(dir, "tpslice", name)
	}
	start := time.Now()
	opts := comm.TuneOptions{DType: t, MinBytes: sizes[0], MaxBytes: sizes[len(sizes)-1],
		Measure: comm.MeasureOptions{Target: time.Millisecond, Rounds: 50, Budget: 500 * time.Millisecond}}
	if bench.IsTerminal(stderr) {
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

// modelReport prices every size with every algorithm the profile offers, the ring and the
// tree under each protocol of --proto (tpslice's, then NCCL's ring with each protocol the
// profile models), as perf's collective model has them.
func modelReport(o benchOptions, op benchOp, t dtype.DType, sizes []int64) (*benchReport, error) {
	p, err := hw.Lookup(o.model)
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	if o.wire != comm.WireExact {
		return wireModelReport(o, op, p, t, sizes)
	}
	protos, err := parseProtos(o.protos)
	if err != nil {
		return nil, err
	}
	n, hosts := o.ranks, o.hosts
	report := &benchReport{Op: string(op.op), Ranks: n, DType: t.String(), Source: "model:" + p.Name, Fabric: p.Fabric.String(),
		Model: "idealised α-β model (one α per step, full link bandwidth)"}
	if p.Calibration != nil {
		report.Model = "calibrated: " + p.Calibration.Basis
	}
	if hosts > 1 {
		report.Hosts = hosts
		report.Model += fmt.Sprintf("; between hosts %.0f GB/s and %v per exchange per GPU (hw InterHost), NCCL's ring with its tuner's network hops",
			p.InterHost.BytesPerSec/1e9, p.InterHost.Latency)
	}
	table := perf.ModelTableHosts(p, hosts, []int{n}, sizes[len(sizes)-1])
	algos := perf.OfferedHosts(p, hosts, n)
	if !op.allReduce() {
		algos = []comm.Algo{comm.OneShot, comm.Ring}
	}
	for _, s := range sizes {
		auto, _ := table.PickChoice(n, s)
		if !op.allReduce() {
			auto = comm.Choice{Algo: comm.ScatterGatherRule(p.Fabric, n)}
		}
		row := benchRow{SizeBytes: s, Count: int(s) / t.Size(), Auto: auto.String()}
		priced := int64(op.perRank(s, t) * t.Size()) // a reduce-scatter's and an all-gather's: each rank's slice
		var best time.Duration
		for _, ch := range op.choices(algos, protos) {
			d, err := perf.CollectiveTimeHosts(p, hosts, op.op, ch, n, priced)
			if err != nil {
				return nil, err
			}
			row.Results = append(row.Results, modelResult(op, ch.String(), s, d))
			// ties: the later (one-shot over ring), but not the tree, which ties one-shot at n = 3
			if ch.Algo != comm.NVLS && (row.FastestWithoutNVLS == "" || d < best || d == best && ch.Algo != comm.Tree) {
				row.FastestWithoutNVLS, best = ch.String(), d
			}
		}
		for _, proto := range comm.Protos {
			if d, ok := perf.NCCLTimeHosts(p, hosts, op.op, proto, n, priced); ok {
				row.Results = append(row.Results, modelResult(op, "nccl "+proto.String(), s, d))
			}
		}
		row.NCCL = "-"
		if _, proto, ok := perf.NCCLFastestHosts(p, hosts, op.op, n, priced); ok {
			row.NCCL = proto.String()
		}
		report.Rows = append(report.Rows, row)
	}
	return report, nil
}

func modelResult(op benchOp, name string, size int64, d time.Duration) benchResult {
	r := benchResult{Algo: name, TimeUS: float64(d.Nanoseconds()) / 1e3}
	if d > 0 {
		algbw := float64(size) / d.Seconds() / 1e9
		r.AlgBWGBps, r.BusBWGBps = algbw, comm.OpBusBW(op.op, algbw, op.n)
	}
	return r
}

func printReport(w io.Writer, r *benchReport) error {
	allReduce := r.Op == string(device.OpAllReduce)
	title := "allreduce-bench"
	if !allReduce {
		title += " --op " + r.Op
	}
	fmt.Fprintf(w, "# tpslice %s: %d ranks, %s, %s", title, r.Ranks, r.DType, r.Source)
	if r.Hosts > 1 {
		fmt.Fprintf(w, ", over %d hosts of %d (InfiniBand between them)", r.Hosts, r.Ranks/r.Hosts)
	}
	if r.Source == "measured" {
		fmt.Fprintf(w, " on the CPU device runtime (%s fabric", r.Fabric)
		if r.NVLS != "" {
			fmt.Fprintf(w, "; nvls is %s: the multicast object sums in software", r.NVLS)
		}
		fmt.Fprintf(w, ")\n# auto: %s\n", r.Selector)
	} else {
		fmt.Fprintf(w, " (%s fabric)\n# %s; nccl X: NCCL's ring with protocol X\n", r.Fabric, r.Model)
	}
	factor, wrong := "2(n-1)/n", "elements off the float64 reference or differing between ranks"
	if !allReduce {
		fmt.Fprintln(w, "# size: the whole n·count buffer, as nccl-tests counts it, and count its elements; oneshot is the direct algorithm")
		factor, wrong = "(n-1)/n", "elements off the float64 reference"
		if r.Op == string(device.OpAllGather) {
			wrong = "elements that are not the gathered input's bits"
		}
	}
	fmt.Fprintf(w, "# time in µs; algbw = size/time and busbw = algbw·%s in GB/s\n", factor)
	wrongHead := "#wrong"
	switch {
	case r.Wire != "":
		fmt.Fprintf(w, "# wire: %s (%s); size, algbw and busbw count the %s bytes, not the wire's\n", r.Wire, wireUsageOf(r.Wire), r.DType)
		if r.Source == "measured" {
			wrongHead = "maxrel"
			fmt.Fprintln(w, "# maxrel: largest relative error against the exact wire's result, of elements of at least its RMS (--check; - without it)")
		}
	case r.Source == "measured":
		fmt.Fprintf(w, "# #wrong: %s (--check; - without it)\n", wrong)
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
