package perf

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/fused"
)

// WriteTable prints the plan as plan's table: a heading naming the node and the
// configuration, a row per prediction with the algorithm at each call site, the fastest
// TP degree per batch, the verdict on crossing hosts (writeHostsVerdict), and the model's
// efficiencies and collectives.
func (rep Plan) WriteTable(w io.Writer) error {
	base, preds := rep.base, rep.preds
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
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.1f\t%s\t%.2f\t%.2f\t%.2f\t%s\t\n", r.tpLabel(), r.Batch, r.TokenLatencyMS, r.TokensPerSec,
			fits, r.WeightGB, r.KVGB, r.CommShare, strings.Join(sites, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, b := range rep.batches() {
		best := Fastest(preds, b, nil)
		if best < 0 {
			fmt.Fprintf(w, "batch %d: no TP degree fits %s's memory\n", b, p.GPU)
			continue
		}
		fmt.Fprintf(w, "batch %d: lowest latency at TP %s (%.3f ms per token)\n", b, rep.Rows[best].tpLabel(), rep.Rows[best].TokenLatencyMS)
	}
	rep.writeHostsVerdict(w)
	fmt.Fprintf(w, "roofline: %.0f%% of HBM bandwidth, %.0f%% of dense BF16 peak; kernel fixed %v, graph node %v, eager launch %v (perf, hw)\n",
		100*MemoryEfficiency, 100*ComputeEfficiency, p.KernelFixed, p.LaunchGraph, p.LaunchEager)
	coll := fmt.Sprintf("idealised α-β model, α = %v per step at %.0f GB/s", p.Alpha, p.LinkBytesPerSec/1e9)
	if p.Calibration != nil {
		coll = "calibrated, " + p.Calibration.Basis
	}
	if rep.spansHosts() {
		coll += fmt.Sprintf("; between hosts %.0f GB/s and %v per exchange per GPU (hw InterHost)", p.InterHost.BytesPerSec/1e9, p.InterHost.Latency)
	}
	_, err := fmt.Fprintf(w, "collectives: %s (perf, hw)\n", coll)
	return err
}

// tpLabel writes a row's TP degree, with its hosts where it spans several: "16 (2×8)".
func (r PlanRow) tpLabel() string {
	if r.Hosts > 1 {
		return fmt.Sprintf("%d (%d×%d)", r.TP, r.Hosts, r.TP/r.Hosts)
	}
	return strconv.Itoa(r.TP)
}
