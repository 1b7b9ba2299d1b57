package collective

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tpslice/tpslice/bench"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/perf"
	"github.com/tpslice/tpslice/topo"
)

// Options is one measured run: every size of Sizes with every choice of Choices on a
// simulated node of Op.N ranks, each algorithm's calls interleaved round by round with
// the others', each keeping its best round (comm.Communicator.Measure).
type Options struct {
	Op      Op
	DType   dtype.DType
	Sizes   []int64       // bytes, as Op.Sizes keeps them
	Choices []comm.Choice // Op.Choices of the algorithms and protocols to measure
	Hosts   int           // the ranks split evenly over this many hosts; 0 or 1: one
	SMs     int           // per device; 0: GOMAXPROCS
	Fabric  device.Fabric
	// BufferBytes, Timeout and Wire are the communicator's (comm.Config).
	BufferBytes int
	Timeout     time.Duration
	Wire        comm.Wire
	// Measure is how each size is timed; its Op is set from Op.
	Measure comm.MeasureOptions
	// Check counts each result's wrong elements against a float64 reference, or on a
	// compressed wire its error against the exact wire's result.
	Check bool
	// Selector is how Auto picks: tuned (measured once, cached in TuneCache: default, the
	// user cache directory), default (vLLM's rule) or model:PROFILE.
	Selector, TuneCache string
	// Log gets the autotuning's progress (redrawn where it is a terminal) and notes.
	Log io.Writer
	// CPUs, under MeasureProcesses, pins worker r's process to CPUs[r] (--cpu-affinity),
	// one list per rank; nil pins nothing. Two ranks left to the kernel at times share a
	// core, where each one's spinning wait holds the core the other needs.
	CPUs []topo.CPUList
	// Trace, when set, receives the kernels of one more call of each choice at the last
	// size, made after the measurement with Trace installed on the node (Node.SetTracer):
	// what one call looks like on a timeline.
	Trace device.Tracer
}

// Measure runs o and reports it as allreduce-bench prints it; bad options are refused
// before the node is built.
func Measure(o Options) (*Report, error) {
	m := o.Measure
	switch {
	case len(o.Sizes) == 0 || len(o.Choices) == 0:
		return nil, errors.New("no size or no algorithm to measure")
	case o.CPUs != nil:
		return nil, errors.New("--cpu-affinity pins worker processes; use --executor mp")
	case m.MinIters < 1 || m.Warmup < 0 || m.Rounds < 1 || m.Target < 0 || m.Budget < 0:
		return nil, fmt.Errorf("--iters and --rounds must be at least 1, --warmup, --target and --budget not negative (got %d, %d, %d, %v, %v)",
			m.MinIters, m.Rounds, m.Warmup, m.Target, m.Budget)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	op, t, sizes, fabric := o.Op, o.DType, o.Sizes, o.Fabric
	node, err := device.NewNode(device.NodeConfig{Devices: op.N, Hosts: o.Hosts, SMs: o.SMs, Fabric: fabric})
	if err != nil {
		return nil, err
	}
	defer node.Close()
	c, err := comm.New(node, comm.Config{BufferBytes: o.BufferBytes, Timeout: o.Timeout, Wire: o.Wire})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	streams := make([]*device.Stream, op.N)
	for r := range streams {
		if streams[r], err = c.Rank(r).Device().NewStream("comm", 0); err != nil {
			return nil, err
		}
	}
	report := &Report{Op: string(op.Kind), Ranks: op.N, DType: t.String(), Source: "measured", Fabric: fabric.String(), Wire: WireName(o.Wire)}
	if c.Hosts() > 1 {
		report.Hosts = c.Hosts()
	}
	if c.HasNVLS() && op.AllReduce() {
		report.NVLS = "emulated"
	}
	report.Selector = "the fabric's rule: oneshot (direct), the ring on PCIe beyond 2 GPUs"
	if op.AllReduce() {
		if report.Selector, err = chooseSelector(o, c, streams); err != nil {
			return nil, err
		}
	}

	inLen, outLen := op.lens(op.PerRank(sizes[len(sizes)-1], t))
	ins, outs := make([]*device.Buffer, op.N), make([]*device.Buffer, op.N)
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
		count := op.PerRank(size, t)
		inCount, _ := op.lens(count)
		comm.Fill(ins, inCount, uint64(size))
		row := Row{SizeBytes: size, Count: int(size) / t.Size(), Auto: op.auto(c, count, t).String()}
		wrong, errs := make([]int, len(o.Choices)), make([]comm.WireError, len(o.Choices))
		var check func(i int) error
		switch {
		case o.Check && o.Wire != comm.WireExact:
			check = func(i int) error { errs[i] = comm.CompareExact(ins, outs, count); return nil }
		case o.Check:
			check = func(i int) error { wrong[i] = op.wrong(ins, outs, count); return nil }
		}
		m.Op = op.Kind
		best, err := c.Measure(streams, o.Choices, ins, outs, count, m, check)
		if err != nil {
			return nil, err
		}
		for i, ch := range o.Choices {
			res := op.result(ch.String(), size, best[i])
			switch {
			case o.Check && o.Wire != comm.WireExact:
				res.Error = &errs[i]
			case o.Check:
				res.Wrong = &wrong[i]
			}
			row.Results = append(row.Results, res)
		}
		report.Rows = append(report.Rows, row)
	}
	if o.Trace != nil {
		if err := traceCalls(o, c, node, streams, ins, outs, op.PerRank(sizes[len(sizes)-1], t)); err != nil {
			return nil, err
		}
	}
	return report, nil
}

// traceCalls makes one call of each choice of o with o.Trace installed on node, on the
// buffers the last size was measured with.
func traceCalls(o Options, c *comm.Communicator, node *device.Node, streams []*device.Stream, ins, outs []*device.Buffer, count int) error {
	node.SetTracer(o.Trace)
	defer node.SetTracer(nil)
	for _, ch := range o.Choices {
		if _, err := c.Bench(streams, o.Op.Kind, ch, ins, outs, count, 0, 1, false); err != nil {
			return fmt.Errorf("traced call of %v: %w", ch, err)
		}
	}
	return nil
}

// chooseSelector installs the table Auto consults and says where it came from.
func chooseSelector(o Options, c *comm.Communicator, streams []*device.Stream) (string, error) {
	t, sizes, log := o.DType, o.Sizes, o.Log
	switch {
	case o.Selector == "default" && c.Hosts() > 1:
		return "default: two-level across hosts", nil
	case o.Selector == "default":
		return "default: vLLM's rule (one-shot below 256-512 KiB, two-shot above; ring on PCIe beyond 2 GPUs)", nil
	case strings.HasPrefix(o.Selector, "model:"):
		p, err := hw.Lookup(strings.TrimPrefix(o.Selector, "model:"))
		if err != nil {
			return "", fmt.Errorf("--select: %w", err)
		}
		c.SetTable(perf.ModelTable(p, c.Hosts(), []int{c.Size()}, sizes[len(sizes)-1]))
		return "model:" + p.Name, nil
	case o.Selector != "tuned":
		return "", fmt.Errorf("--select: want tuned, default or model:PROFILE, got %q", o.Selector)
	}
	path := o.TuneCache
	if path == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("--tune-cache: no user cache directory (%w); give a file", err)
		}
		name := fmt.Sprintf("allreduce-tune-n%d-%v-%v.json", c.Size(), o.Fabric, t)
		if c.Hosts() > 1 {
			name = fmt.Sprintf("allreduce-tune-n%d-hosts%d-%v-%v.json", c.Size(), c.Hosts(), o.Fabric, t)
		}
		path = filepath.Join(dir, "tpslice", name)
	}
	start := time.Now()
	opts := comm.TuneOptions{DType: t, MinBytes: sizes[0], MaxBytes: sizes[len(sizes)-1],
		Measure: comm.MeasureOptions{Target: time.Millisecond, Rounds: 50, Budget: 500 * time.Millisecond}}
	if bench.IsTerminal(log) {
		opts.Progress = func(done, total int) { fmt.Fprintf(log, "\r# autotuning auto's table: %d/%d sizes", done, total) }
	}
	table, fresh, err := c.TunedTable(path, streams, opts)
	if fresh {
		fmt.Fprintf(log, "\r# autotuned auto's table for %d sizes in %.1fs, cached in %s\n", len(table.Rows), time.Since(start).Seconds(), path)
	}
	if err != nil && table == nil {
		return "", err
	}
	if err != nil {
		fmt.Fprintf(log, "# warning: %v\n", err)
	}
	c.SetTable(table)
	return "tuned (" + path + ")", nil
}
