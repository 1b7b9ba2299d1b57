package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/tpslice/tpslice/bench/collective"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/perf"
)

// allreduce-bench with --allreduce-dtype: only the algorithms that run the wire, the
// error against the exact wire instead of #wrong, and the model priced at the wire's bytes.

// wireAlgos keeps, of --algo, what runs o's wire: "all" keeps one-shot, two-shot and
// auto; naming another algorithm is an error.
func wireAlgos(algos []comm.Algo, o benchOptions) ([]comm.Algo, error) {
	var out []comm.Algo
	for _, a := range algos {
		switch {
		case o.wire.Supports(a):
			out = append(out, a)
		case o.algos != "all":
			return nil, fmt.Errorf("--algo %v does not run --allreduce-dtype %v (oneshot, twoshot and auto do)", a, o.wire)
		}
	}
	return out, nil
}

// wireUsageOf says in a few words what a wire moves.
func wireUsageOf(name string) string {
	if name == comm.WireFP8.String() {
		return "e4m3 codes and one f32 scale per 32 values, summed in f32"
	}
	return "f32 rounded to bf16, summed in f32"
}

// wireModelReport prices one-shot and two-shot with the message the wire carries (perf
// prices what the kernels declare, comm.Wire.MessageBytes), next to NCCL's ring with the
// fastest protocol on the exact bytes, which has no such wire.
func wireModelReport(o benchOptions, op collective.Op, p hw.Profile, t dtype.DType, sizes []int64) (*collective.Report, error) {
	n := o.ranks
	report := &collective.Report{Op: string(op.Kind), Ranks: n, DType: t.String(), Wire: collective.WireName(o.wire), Source: "model:" + p.Name, Fabric: p.Fabric.String(),
		Model: "idealised α-β model (one α per step, full link bandwidth)"}
	if p.Calibration != nil {
		report.Model = "calibrated: " + p.Calibration.Basis
	}
	costs, nccl := perf.CostsOf(p, perf.TPSlice), perf.CostsOf(p, perf.NCCL)
	for _, s := range sizes {
		count := int(s) / t.Size()
		wire := int64(o.wire.MessageBytes(count, t))
		row := collective.Row{SizeBytes: s, Count: count}
		var best time.Duration
		for _, a := range []comm.Algo{comm.OneShot, comm.TwoShot} {
			exact, err := costs.Time(perf.Collective{Op: device.OpAllReduce, Algo: a, Ranks: n, Bytes: s})
			if err != nil {
				return nil, err
			}
			d, err := costs.Time(perf.Collective{Op: device.OpAllReduce, Algo: a, Ranks: n, Bytes: wire})
			if err != nil {
				return nil, err
			}
			row.Results = append(row.Results, modelResult(op, a.String()+" exact", s, exact), modelResult(op, a.String()+" "+o.wire.String(), s, d))
			if row.Auto == "" || d < best {
				row.Auto, best = a.String(), d
			}
		}
		ring, d, err := nccl.Choose(perf.Collective{Op: device.OpAllReduce, Ranks: n, Bytes: s})
		if err != nil {
			return nil, err
		}
		row.Results = append(row.Results, modelResult(op, "nccl "+strings.ToLower(ring.Proto.String()), s, d))
		row.FastestWithoutNVLS, row.NCCL = row.Auto, ring.Proto.String()
		report.Rows = append(report.Rows, row)
	}
	return report, nil
}
