package perf

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/models"
)

// WriteNUMATable prints what each placement of PriceNUMA makes of model's decode step in
// weight type t on server s, for each TP degree of tps (tpslice numa's table): the model's
// and the server's figures, then per degree and placement the step, batch 1's tokens/s,
// the ratio to a rank a node and the resource that bounds it.
func WriteNUMATable(w io.Writer, s hw.TwoSocket, model models.Config, t dtype.DType, tps []int) error {
	weights := model.WeightBytes(t)
	fmt.Fprintf(w, "%s: %.0fM parameters in %v, %.2f GB of weights read a decode step, split evenly over the ranks\n",
		model.Name, float64(model.ParamCount())/1e6, t, float64(weights)/1e9)
	fmt.Fprintf(w, "%s: %.1f GB/s of DRAM a socket, %.1f GB/s a direction between the sockets (peaks: %s)\n",
		s.CPU, s.MemBytesPerSec/1e9, s.LinkBytesPerSec/1e9, s.Source)
	fmt.Fprintln(w, "a prediction of the weight reads alone (perf.PriceNUMA), not a measurement")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TP\tplacement\tstep\ttokens/s at batch 1\tvs a rank a node\tbound by")
	for _, n := range tps {
		var perNode NUMAStep
		for _, p := range NUMAPlacements {
			step, err := PriceNUMA(s, n, weights/int64(n), p)
			if err != nil {
				return err
			}
			if p == PerNode {
				perNode = step
			}
			fmt.Fprintf(tw, "%d\t%v\t%.2f ms\t%.0f\t%.2f×\t%s\n", n, p, float64(step.Time.Microseconds())/1e3,
				1/step.Time.Seconds(), step.Time.Seconds()/perNode.Time.Seconds(), step.Bound)
		}
	}
	return tw.Flush()
}
