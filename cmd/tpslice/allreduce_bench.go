package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/tpslice/tpslice/bench/collective"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/topo"
	"github.com/tpslice/tpslice/trace"
)

type benchOptions struct {
	ranks, factor, iters, warmup, rounds, sms int
	rankList                                  string // -g: one run per world size
	begin, end, buffer                        sizeFlag
	target, budget                            time.Duration
	dtypeName, algos, model, fabric, selector string
	op                                        string
	protos                                    string
	tuneCache                                 string
	trace                                     string // --trace: the file of one traced call per algorithm
	check, asJSON, blocking                   bool
	timeout                                   time.Duration
	hosts                                     int // --hosts: the ranks split over this many
	wire                                      comm.Wire
	executor                                  string // --executor: inproc or mp (a worker process per rank)
	selectorSet                               bool   // --select was given
	affinity                                  topo.Affinity
}

func allreduceBench(args []string, stdout, stderr io.Writer) error {
	o := benchOptions{begin: 8, end: 64 << 20, buffer: comm.DefaultBufferBytes}
	fs := flag.NewFlagSet("allreduce-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, name := range []string{"g", "ranks"} {
		fs.StringVar(&o.rankList, name, "8", "number of ranks (devices), 1 to 8, or a comma-separated list: a table each")
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
	fs.BoolVar(&o.blocking, "blocking", false, "wait for each call's result before issuing the next, as MPI_Allreduce does (nccl-tests' -z 1); under --executor mp a worker then runs a small call's kernel on its own thread where its stream is idle")
	fs.BoolVar(&o.check, "check", false, "count wrong elements against a float64 reference")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object instead of the table")
	fs.StringVar(&o.model, "model", "", "print the cost model's table for a hardware profile ("+strings.Join(hw.Names(), ", ")+"; PROFILE"+hw.IdealSuffix+" for the idealised α-β model) instead of measuring: the algorithms the profile offers, and those --algo names besides")
	fs.StringVar(&o.fabric, "fabric", "nvswitch", "simulated interconnect: nvswitch (offers NVLS), nvlink or pcie")
	smsFlag(fs, &o.sms)
	fs.Var(&o.buffer, "buffer", "registered peer buffer per rank; larger messages run in chunks")
	fs.StringVar(&o.selector, "select", "tuned", "how auto picks: tuned (measure once, cache; inproc only), default (vLLM's rule; mp's default), or model:PROFILE")
	fs.StringVar(&o.tuneCache, "tune-cache", "", "autotuning cache file (default: the user cache directory)")
	fs.DurationVar(&o.timeout, "timeout", comm.DefaultTimeout, "deadline of every wait on a peer")
	fs.StringVar(&o.trace, "trace", "", "after measuring, trace one call of each algorithm at the largest size into `FILE` ("+traceFormats+")")
	addWireFlag(fs, &o.wire)
	executorFlag(fs, &o.executor)
	fs.Var(affinityFlag{&o.affinity}, "cpu-affinity", "under --executor mp, where each rank's worker runs: auto or none (nothing pinned), or a CPU list per rank separated by '|', e.g. 0|1")
	if err := parseFlagsHelp(fs, args, "usage: tpslice allreduce-bench [flags]\n\n"+algoHelp()); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("allreduce-bench: unexpected argument %q", fs.Arg(0))
	}
	o.selectorSet = flagSet(fs, "select")
	if err := checkBenchExecutor(&o); err != nil {
		return fmt.Errorf("allreduce-bench: %w", err)
	}
	ranks, err := parseIntList("ranks", o.rankList, math.MinInt32, math.MaxInt32) // each checked below, with --hosts
	if err != nil {
		return fmt.Errorf("allreduce-bench: %w", err)
	}
	for i, n := range ranks {
		if i > 0 && !o.asJSON {
			fmt.Fprintln(stdout)
		}
		o.ranks = n
		if err := allreduceBenchRanks(o, stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}

// checkBenchExecutor checks --executor, and what worker processes cannot honour: auto's
// table is vLLM's rule under mp unless --select says otherwise (autotuning needs every
// rank in one process), and --trace and --model run no worker.
func checkBenchExecutor(o *benchOptions) error {
	if err := validExecutor(o.executor); err != nil || o.executor != executorProcesses {
		return err
	}
	switch {
	case o.trace != "":
		return errors.New("--trace: tracing records every rank's kernels in one process; use --executor inproc")
	case o.model != "":
		return errors.New("--model prices the collectives and runs no worker: drop --executor mp")
	case o.selectorSet && o.selector == "tuned":
		return errors.New("--select tuned autotunes with every rank in one process; under --executor mp give --select default or model:PROFILE")
	case !o.selectorSet:
		o.selector = "default"
	}
	return nil
}

// allreduceBenchRanks measures or prices one world size (o.ranks) and prints its table.
func allreduceBenchRanks(o benchOptions, stdout, stderr io.Writer) error {
	t, err := dtype.ParseScalar(o.dtypeName)
	if err != nil {
		return fmt.Errorf("allreduce-bench: --dtype: %w", err)
	}
	if t == dtype.F16 {
		return errors.New("allreduce-bench: --dtype: f16 all-reduce is not benchmarked; use f32 or bf16")
	}
	sizes, err := collective.SizeRange(int64(o.begin), int64(o.end), o.factor, t)
	if err != nil {
		return fmt.Errorf("allreduce-bench: %w", err)
	}
	op, err := collective.ParseOpOver(o.op, o.ranks, o.hosts, o.wire)
	if err == nil && o.trace != "" && o.model != "" {
		err = errors.New("--trace records measured calls; --model measures nothing")
	}
	if err == nil {
		sizes, err = op.Sizes(sizes, t)
	}
	if err != nil {
		return fmt.Errorf("allreduce-bench: %w", err)
	}
	var report *collective.Report
	if o.model != "" {
		report, err = price(o, op, t, sizes)
	} else {
		report, err = measure(o, op, t, sizes, stderr)
	}
	if err != nil {
		return fmt.Errorf("allreduce-bench: %w", err)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return report.WriteTable(stdout)
}

// measure resolves --fabric, --algo and --proto and measures (package collective).
func measure(o benchOptions, op collective.Op, t dtype.DType, sizes []int64, stderr io.Writer) (*collective.Report, error) {
	fabric, err := device.ParseFabric(o.fabric)
	if err != nil {
		return nil, fmt.Errorf("--fabric: %w", err)
	}
	algos, err := op.Algos(o.algos, fabric, o.hosts)
	if err == nil && o.wire != comm.WireExact {
		algos, err = collective.WireAlgos(algos, o.wire, o.algos == "all")
	}
	if err != nil {
		return nil, err
	}
	protos, err := collective.ParseProtos(o.protos)
	if err != nil {
		return nil, err
	}
	opts := collective.Options{Op: op, DType: t, Sizes: sizes, Choices: op.Choices(algos, protos),
		Hosts: o.hosts, SMs: o.sms, Fabric: fabric, BufferBytes: int(o.buffer), Timeout: o.timeout, Wire: o.wire,
		Measure: comm.MeasureOptions{Warmup: o.warmup, MinIters: o.iters, Target: o.target, Budget: o.budget, Rounds: o.rounds, Blocking: o.blocking},
		Check:   o.check, Selector: o.selector, TuneCache: o.tuneCache, Log: stderr, CPUs: o.affinity.Lists}
	if o.executor == executorProcesses {
		return collective.MeasureProcesses(context.Background(), opts)
	}
	if o.trace == "" {
		return collective.Measure(opts)
	}
	f, err := os.Create(o.trace) // now, so that a bad path fails before the measurement
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	defer f.Close() // for early returns; writeTrace closes it and reports that error
	rec := trace.NewRecorder(trace.Config{ProcessName: func(d int) string { return fmt.Sprintf("rank %d", d) }})
	opts.Trace = rec
	report, err := collective.Measure(opts)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(o.trace) // no trace was written
		return nil, err
	}
	where := fmt.Sprintf("%d ranks", op.N)
	if o.hosts > 1 {
		where += fmt.Sprintf(" on %d hosts", o.hosts)
	}
	title := fmt.Sprintf("%s of %d bytes (%v) over %s, one call each, on the CPU device runtime", op.Kind, sizes[len(sizes)-1], t, where)
	if err := writeTrace(f, rec, title); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "# trace: %s (%d events)\n", o.trace, rec.Len())
	return report, nil
}

// price resolves --model, --algo and --proto and prices (package collective).
func price(o benchOptions, op collective.Op, t dtype.DType, sizes []int64) (*collective.Report, error) {
	p, err := hw.Lookup(o.model)
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	protos, err := collective.ParseProtos(o.protos)
	if err != nil {
		return nil, err
	}
	var named []comm.Algo // "all": what the profile offers, nothing besides
	if o.algos != "all" {
		if named, err = op.Algos(o.algos, p.Fabric, o.hosts); err != nil {
			return nil, err
		}
	}
	return collective.Price(collective.ModelOptions{Op: op, DType: t, Sizes: sizes, Profile: p, Hosts: o.hosts,
		Named: named, Protos: protos, Wire: o.wire})
}
