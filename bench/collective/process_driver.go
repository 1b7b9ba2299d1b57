//go:build linux

package collective

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/executor"
	"github.com/tpslice/tpslice/internal/ipc"
)

// MeasureProcesses is Measure with one worker process per rank (allreduce-bench
// --executor mp): it launches o.Op.N workers running WorkerJob, relays the all-gather of
// handles that joins their communicator, and runs Measure's schedule (comm.MeasureRounds)
// by asking every worker to time each choice; a call's time is the slowest rank's. With
// Check every worker checks its own output against the reference of every rank's seeded
// inputs, and an all-reduce's outputs must be bitwise alike across ranks. Each worker runs
// on its share of this process's GOMAXPROCS (at least one thread), with as many SMs unless
// o.SMs says otherwise. A worker that dies fails the run at once, naming its rank, pid,
// exit status and last collective; the workers are reaped and their memory unmapped before
// it returns.
func MeasureProcesses(ctx context.Context, o Options) (_ *Report, err error) {
	if err := o.checkProcesses(); err != nil {
		return nil, err
	}
	sizes := o.Sizes
	// The workers share this process's cores (GOMAXPROCS) as the ranks of a run in one
	// process share its threads: n runtimes of GOMAXPROCS threads each, their blocks
	// yielding to each other's, would outnumber the cores n times.
	share := max(1, runtime.GOMAXPROCS(0)/o.Op.N)
	if o.SMs == 0 {
		o.SMs = share
	}
	e, err := executor.Launch(ctx, executor.Config{Workers: o.Op.N, Job: JobName, Log: o.Log,
		Env: []string{"GOMAXPROCS=" + strconv.Itoa(share)}})
	if err != nil {
		return nil, err
	}
	d := &driver{e: e}
	defer func() { err = errors.Join(err, d.close()) }()
	s := setup{Op: o.Op.Kind, DType: o.DType, MaxSize: sizes[len(sizes)-1], Choices: o.Choices, Hosts: o.Hosts, SMs: o.SMs,
		Fabric: o.Fabric, BufferBytes: o.BufferBytes, Timeout: o.Timeout, Wire: o.Wire, Selector: o.Selector, Blocking: o.Measure.Blocking,
		CPUs: o.CPUs}
	r, err := d.join(s)
	if err != nil {
		return nil, d.named(err)
	}
	report := &Report{Op: string(o.Op.Kind), Ranks: o.Op.N, DType: o.DType.String(), Source: "measured", Fabric: o.Fabric.String(),
		Wire: WireName(o.Wire), Selector: r.Selector}
	if r.Hosts > 1 {
		report.Hosts = r.Hosts
	}
	if r.NVLS && o.Op.AllReduce() {
		report.NVLS = "emulated"
	}
	report.CPUs = r.rankCPUs
	for _, size := range sizes {
		row, err := d.measureSize(o, size)
		if err != nil {
			return nil, d.named(err)
		}
		report.Rows = append(report.Rows, row)
	}
	return report, nil
}

// checkProcesses refuses what worker processes cannot do.
func (o Options) checkProcesses() error {
	switch {
	case len(o.Sizes) == 0 || len(o.Choices) == 0:
		return errors.New("no size or no algorithm to measure")
	case o.Trace != nil:
		return errors.New("--trace records calls with every rank in one process; use --executor inproc")
	case o.CPUs != nil && len(o.CPUs) != o.Op.N:
		return fmt.Errorf("--cpu-affinity gives %d CPU lists for %d ranks (one a rank, separated by '|')", len(o.CPUs), o.Op.N)
	case o.Selector == "tuned":
		return errors.New("--select tuned autotunes with every rank in one process; under --executor mp give --select default or model:PROFILE")
	}
	return nil
}

// driver is MeasureProcesses' side of its workers.
type driver struct {
	e      *executor.Executor
	deaths *comm.DeathWatch // every rank's control buffer, once the workers joined
}

// join sends every worker the setup, relays the all-gather of their handles (mapping
// every rank's control buffer on the way) and gathers their ready answers.
func (d *driver) join(s setup) (joined, error) {
	var r joined
	err := d.e.Control(func(conns []*ipc.Conn) error {
		for _, c := range conns {
			if err := send(c, kindSetup, s); err != nil {
				return err
			}
		}
		all, err := ipc.RelayGather(conns, nil)
		if err != nil {
			return err
		}
		defer func() {
			for _, hs := range all {
				for _, h := range hs {
					_ = h.Close()
				}
			}
		}()
		if d.deaths, err = comm.WatchDeaths(all, d.e.Failed(), d.e.DeadRank); err != nil {
			return err
		}
		for rank, c := range conns {
			var got ready
			if err := recv(c, kindSetup, &got); err != nil {
				return fmt.Errorf("rank %d: %w", rank, err)
			}
			if rank == 0 {
				r.ready = got
			}
			if s.CPUs != nil {
				r.rankCPUs = append(r.rankCPUs, got.CPUs)
			}
		}
		return nil
	})
	return r, err
}

// joined is what the workers answered setup: rank 0's answer, and where every rank runs
// where the setup pinned them.
type joined struct {
	ready
	rankCPUs []string
}

// named adds to err the dead rank's last collective, as its control buffer records it.
func (d *driver) named(err error) error {
	if d.deaths == nil {
		return err
	}
	return d.deaths.Named(err)
}

// close ends the death watch, unmaps the control buffers and closes the executor, which
// reaps every worker.
func (d *driver) close() error {
	var errs []error
	if d.deaths != nil {
		errs = append(errs, d.deaths.Close())
	}
	return errors.Join(append(errs, d.e.Close())...)
}

// round sends q as kind to every worker and returns their replies, by rank.
func (d *driver) round(kind uint32, q benchRequest) ([]benchReply, error) {
	replies := make([]benchReply, d.e.World())
	err := d.e.Control(func(conns []*ipc.Conn) error {
		for _, c := range conns {
			if err := send(c, kind, q); err != nil {
				return err
			}
		}
		for rank, c := range conns {
			if err := recv(c, kind, &replies[rank]); err != nil {
				return fmt.Errorf("rank %d: %w", rank, err)
			}
		}
		return nil
	})
	return replies, err
}

// measureSize measures every choice at size, as Measure does in one process.
func (d *driver) measureSize(o Options, size int64) (Row, error) {
	count := o.Op.PerRank(size, o.DType)
	row := Row{SizeBytes: size, Count: int(size) / o.DType.Size()}
	bench := func(i, warmup, iters int) (time.Duration, error) {
		replies, err := d.round(kindBench, benchRequest{Choice: i, Size: size, Warmup: warmup, Iters: iters})
		if err != nil {
			return 0, err
		}
		row.Auto = replies[0].Auto
		slowest := time.Duration(0)
		for _, r := range replies {
			slowest = max(slowest, r.PerCall)
		}
		return slowest, nil
	}
	checks := make([]benchReply, len(o.Choices))
	var after func(i int) error
	if o.Check {
		after = func(i int) error {
			replies, err := d.round(kindCheck, benchRequest{Choice: i, Size: size})
			checks[i] = merge(o.Op, replies, count)
			return err
		}
	}
	m := o.Measure
	m.Op = o.Op.Kind
	best, err := comm.MeasureRounds(len(o.Choices), m, bench, after)
	if err != nil {
		return row, err
	}
	for i, ch := range o.Choices {
		res := o.Op.result(ch.String(), size, best[i])
		switch {
		case o.Check && o.Wire != comm.WireExact:
			res.Error = &checks[i].Error
		case o.Check:
			res.Wrong = &checks[i].Wrong
		}
		row.Results = append(row.Results, res)
	}
	return row, nil
}

// merge sums the ranks' checks into one: wrong elements over every rank, the largest
// wire error, and for an all-reduce every element of a rank whose output's bits differ
// from rank 0's (the digest tells no more).
func merge(op Op, replies []benchReply, count int) benchReply {
	var m benchReply
	for _, r := range replies {
		m.Wrong += r.Wrong
		m.Error.MaxAbs = max(m.Error.MaxAbs, r.Error.MaxAbs)
		m.Error.MaxRel = max(m.Error.MaxRel, r.Error.MaxRel)
		m.Error.RelRMS = max(m.Error.RelRMS, r.Error.RelRMS)
		if op.AllReduce() && len(replies) > 0 && r.Digest != replies[0].Digest {
			m.Wrong += count
			m.Error.Differ = count
		}
	}
	return m
}
