package collective

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/perf"
)

// ModelOptions is one priced run: every size of Sizes on Op.N ranks of Profile, priced by
// perf's collective model instead of measured.
type ModelOptions struct {
	Op      Op
	DType   dtype.DType
	Sizes   []int64 // bytes, as Op.Sizes keeps them
	Profile hw.Profile
	Hosts   int // the ranks split evenly over this many hosts (the profile's network); 0 or 1: one
	// Named are algorithms priced besides those the profile offers (--algo: a baseline
	// or the flag-free one-shot), which the model's choices leave out; Auto adds nothing.
	Named []comm.Algo
	// Protos are the protocols the ring and the tree are priced under.
	Protos []comm.Proto
	// Wire, when compressed, is the all-reduce's wire (one host only): one-shot and
	// two-shot, which run it, are priced instead, each on the exact bytes and on the
	// wire's.
	Wire comm.Wire
}

// Price prices o as allreduce-bench --model prints it. For each size: every algorithm the
// profile offers and those of Named, the ring and the tree under each of Protos; then
// NCCL's ring under each protocol the profile models. Auto is the model's selection
// table's choice (perf.ModelTable), FastestWithoutNVLS the fastest offered peer-buffer
// algorithm, NCCL the protocol its tuner picks. On a compressed wire each algorithm that
// runs it is priced twice, "ALGO exact" and "ALGO WIRE" (at the message the kernels
// declare, comm.Wire.MessageBytes), next to NCCL's ring with its fastest protocol on the
// exact bytes, which has no such wire; Auto is then the fastest on the wire.
func Price(o ModelOptions) (*Report, error) {
	op, p, compressed := o.Op, o.Profile, o.Wire != comm.WireExact
	switch {
	case len(o.Sizes) == 0:
		return nil, errors.New("no size to price")
	case compressed && !op.AllReduce():
		return nil, fmt.Errorf("the %v wire is the all-reduce's; %s runs exact", o.Wire, op.Kind)
	case compressed && o.Hosts > 1:
		return nil, fmt.Errorf("--allreduce-dtype %v with --model and --hosts %d: the wire is not modelled across hosts", o.Wire, o.Hosts)
	}
	report := &Report{Op: string(op.Kind), Ranks: op.N, DType: o.DType.String(), Wire: WireName(o.Wire), Source: "model:" + p.Name,
		Fabric: p.Fabric.String(), Model: "idealised α-β model (one α per step, full link bandwidth)"}
	if p.Calibration != nil {
		report.Model = "calibrated: " + p.Calibration.Basis
	}
	if o.Hosts > 1 {
		report.Hosts = o.Hosts
		report.Model += fmt.Sprintf("; between hosts %.0f GB/s and %v per exchange per GPU (hw InterHost), NCCL's ring with its tuner's network hops",
			p.InterHost.BytesPerSec/1e9, p.InterHost.Latency)
	}
	m := pricer{ModelOptions: o, costs: perf.CostsOf(p, perf.TPSlice), nccl: perf.CostsOf(p, perf.NCCL), offered: perf.Offered(p, o.Hosts, op.N)}
	if !op.AllReduce() {
		m.offered = []comm.Algo{comm.OneShot, comm.Ring}
	}
	if op.AllReduce() && !compressed {
		m.table = perf.ModelTable(p, o.Hosts, []int{op.N}, o.Sizes[len(o.Sizes)-1])
	}
	m.choices = op.Choices(m.algos(), o.Protos)
	for _, s := range o.Sizes {
		row, err := m.row(s)
		if err != nil {
			return nil, err
		}
		report.Rows = append(report.Rows, row)
	}
	return report, nil
}

// pricer prices the rows of one report.
type pricer struct {
	ModelOptions
	costs, nccl perf.Costs
	offered     []comm.Algo // the model's own choices
	choices     []comm.Choice
	table       *comm.Table // the exact all-reduce's Auto
}

// algos lists what the rows price: the algorithms that run a compressed wire; else the
// offered ones, then those of Named besides.
func (m *pricer) algos() []comm.Algo {
	if m.Wire != comm.WireExact {
		return slices.DeleteFunc(slices.Clone(comm.Algos), func(a comm.Algo) bool { return !m.Wire.Supports(a) })
	}
	algos := slices.Clone(m.offered)
	for _, a := range m.Named {
		if a != comm.Auto && !slices.Contains(algos, a) {
			algos = append(algos, a)
		}
	}
	return algos
}

// row prices size s.
func (m *pricer) row(s int64) (Row, error) {
	op, t, compressed := m.Op, m.DType, m.Wire != comm.WireExact
	row := Row{SizeBytes: s, Count: int(s) / t.Size()}
	// a reduce-scatter's and an all-gather's bytes: each rank's slice
	c := perf.Collective{Op: op.Kind, Ranks: op.N, Hosts: m.Hosts, Bytes: int64(op.PerRank(s, t) * t.Size())}
	ring := c // NCCL's
	var best time.Duration
	for _, ch := range m.choices {
		c.Algo, c.Proto = ch.Algo, ch.Proto
		d, err := m.costs.Time(c)
		if err != nil {
			return row, err
		}
		name := ch.String()
		if compressed {
			row.Results = append(row.Results, op.result(name+" exact", s, d))
			onWire := c
			onWire.Bytes = int64(m.Wire.MessageBytes(op.PerRank(s, t), t))
			if d, err = m.costs.Time(onWire); err != nil {
				return row, err
			}
			name += " " + m.Wire.String()
		}
		row.Results = append(row.Results, op.result(name, s, d))
		if m.faster(ch.Algo, d, best, row.FastestWithoutNVLS == "") {
			row.FastestWithoutNVLS, best = ch.String(), d
		}
	}
	switch {
	case compressed:
		row.Auto = row.FastestWithoutNVLS
	case op.AllReduce():
		auto, _ := m.table.Pick(op.N, s)
		row.Auto = auto.String()
	default:
		row.Auto = comm.ScatterGatherRule(m.Profile.Fabric, op.N).String()
	}
	if !compressed { // a compressed wire's row is wide enough without them
		for _, proto := range comm.Protos {
			ring.Proto = proto
			if d, err := m.nccl.Time(ring); err == nil { // a protocol the profile does not model is left out
				row.Results = append(row.Results, op.result("nccl "+proto.String(), s, d))
			}
		}
		ring.Proto = comm.ProtoAuto
	}
	row.NCCL = "-"
	if fastest, d, err := m.nccl.Choose(ring); err == nil {
		row.NCCL = fastest.Proto.String()
		if compressed {
			row.Results = append(row.Results, op.result("nccl "+strings.ToLower(row.NCCL), s, d))
		}
	}
	return row, nil
}

// faster reports whether algorithm a at time d displaces the fastest so far (best; none
// yet when first). Of the exact wire's, only the offered peer-buffer algorithms count,
// ties going to the later (one-shot over ring) but not to the tree, which ties one-shot
// at n = 3; on a compressed wire, ties go to the earlier (one-shot).
func (m *pricer) faster(a comm.Algo, d, best time.Duration, first bool) bool {
	if m.Wire != comm.WireExact {
		return first || d < best
	}
	return a != comm.NVLS && slices.Contains(m.offered, a) && (first || d < best || d == best && a != comm.Tree)
}
