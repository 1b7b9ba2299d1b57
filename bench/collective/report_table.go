package collective

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
)

// WriteTable prints the report as allreduce-bench's table, nccl-tests' columns: a heading
// naming the ranks, the source (measured, or the model it rests on) and what the columns
// count, then a row per size with each algorithm's time and bandwidths (and, measured, its
// wrong elements or its error against the exact wire).
func (r *Report) WriteTable(w io.Writer) error {
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
		fmt.Fprintf(w, "# wire: %s (%s); size, algbw and busbw count the %s bytes, not the wire's\n", r.Wire, wireUsage(r.Wire), r.DType)
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

// wireUsage says in a few words what a wire moves.
func wireUsage(name string) string {
	if name == comm.WireFP8.String() {
		return "e4m3 codes and one f32 scale per 32 values, summed in f32"
	}
	return "f32 rounded to bf16, summed in f32"
}
