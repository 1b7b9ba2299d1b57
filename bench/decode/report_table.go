package decode

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tpslice/tpslice/comm"
)

// WriteTable prints rep, measured with o, as bench's table: a heading naming the model,
// its weight bytes, the requests and the launch mode, the roofline of the read bandwidth
// and what the columns mean, then a row per TP degree and batch with the breakdown's
// classes in Keys' order ("-" where a row has none).
func WriteTable(w io.Writer, o Options, rep Report) error {
	mode := "decode graphs"
	if o.Config.Eager {
		mode = "eager"
	}
	if o.Config.Processes {
		mode += "; a worker process per rank (--executor mp), rank 0's kernels traced in its worker"
	}
	if w := o.Config.AllReduceWire; w != comm.WireExact {
		mode += "; all-reduces on the " + w.String() + " wire"
	}
	fmt.Fprintf(w, "# tpslice bench: %s, %.1f MB of weights; prompt %d, generate %d tokens per request (greedy); %s\n",
		rep.Model, float64(rep.WeightBytes)/1e6, o.PromptLen, o.GenLen, mode)
	if rep.ReadGBps > 0 {
		fmt.Fprintf(w, "# read bandwidth %.1f GB/s (membw): reading the weights once takes %.2f ms, the floor of a decode step\n",
			rep.ReadGBps, float64(rep.WeightBytes)/rep.ReadGBps/1e6)
	}
	fmt.Fprintln(w, "# TTFT: mean over the batch, from its submission; pp tok/s: the batch's prompt tokens over its submission to")
	fmt.Fprintln(w, "# its last first token (prefill, llama-bench's pp); p50/p99: gaps between a request's successive tokens while")
	fmt.Fprintln(w, "# the whole batch decodes, and tok/s the batch's tokens over that time (tg); e2e tok/s: the batch's output tokens")
	fmt.Fprintln(w, "# over its submission to its last token (TTFT and decode); comm: collectives' share of a step;")
	fmt.Fprintln(w, "# then rank 0's kernel ms per decode step by class (host overhead: the rest of the step)")
	keys := Keys(rep.Rows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "tp\tbatch\tTTFT ms\tpp tok/s\tp50 ms\tp99 ms\ttok/s\te2e tok/s\tcomm\t(wait)\t")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t", k)
	}
	fmt.Fprintln(tw)
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%.1f\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f%%\t%.1f%%\t", r.TP, r.Batch, r.TTFTMs, r.PromptTokensPerS, r.P50Ms, r.P99Ms, r.TokensPerS, r.E2ETokensPerS, 100*r.CommShare, 100*r.CommWaitShare)
		for _, k := range keys {
			if v, ok := r.Breakdown[k]; ok {
				fmt.Fprintf(tw, "%.3f\t", v)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
