package perf

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPlanHostsVerdict: per batch, the fastest row across hosts against the fastest in one
// host among the rows that fit, and one verdict for the four shapes the comparison takes;
// nothing when no row spans hosts or no batch has rows of both kinds that fit.
func TestPlanHostsVerdict(t *testing.T) {
	// steps in ms: TP 8 in one host, then TP 16 over two, for each batch.
	plan := func(batches []int, in, across []float64, acrossFits bool) Plan {
		var preds []Prediction
		for i, b := range batches {
			preds = append(preds,
				Prediction{Config: Config{TP: 8, Batch: b}, Step: time.Duration(in[i] * float64(time.Millisecond)), Fits: true},
				Prediction{Config: Config{TP: 16, Batch: b, Hosts: 2}, Step: time.Duration(across[i] * float64(time.Millisecond)), Fits: acrossFits})
		}
		return NewPlan(Config{}, preds)
	}
	verdict := func(p Plan) string {
		var b bytes.Buffer
		p.writeHostsVerdict(&b)
		return b.String()
	}
	for _, tc := range []struct {
		name        string
		in, across  []float64
		want        string
		wantPerLine string
	}{
		{"pays everywhere", []float64{2, 4, 8}, []float64{1, 3, 7}, "verdict: TP across hosts pays at every batch priced (1, 8, 64)\n",
			"batch 8: TP 16 (2×8) 3.000 ms vs TP 8 in one host 4.000 ms per token: crossing hosts pays (1.33x)\n"},
		{"never pays", []float64{1, 2, 3}, []float64{1, 3, 4}, "verdict: TP across hosts never pays here: one host is faster at every batch priced (1, 8, 64)\n",
			"batch 1: TP 16 (2×8) 1.000 ms vs TP 8 in one host 1.000 ms per token: crossing hosts does not pay (1.00x)\n"},
		{"stops paying", []float64{2, 2, 2}, []float64{1, 1, 3}, "verdict: TP across hosts pays up to batch 8 and stops paying from batch 64 on (one host is faster at 64)\n", ""},
		{"mixed", []float64{2, 2, 2}, []float64{1, 3, 1}, "verdict: TP across hosts pays at batch 1, 64 and not at batch 8\n", ""},
	} {
		out := verdict(plan([]int{1, 8, 64}, tc.in, tc.across, true))
		require.Equal(t, 3, strings.Count(out, "\n")-1, "%s: a line per batch, then the verdict:\n%s", tc.name, out)
		require.True(t, strings.HasSuffix(out, tc.want), "%s:\n%s", tc.name, out)
		require.Contains(t, out, tc.wantPerLine, tc.name)
	}
	require.Empty(t, verdict(plan([]int{1}, []float64{2}, []float64{1}, false)), "no row across hosts fits")
	require.Empty(t, verdict(NewPlan(Config{}, []Prediction{{Config: Config{TP: 8, Batch: 1}, Fits: true}})), "no row spans hosts")
}

// TestPlanRows: a row per prediction, in order, with its call sites keyed "after SITE",
// its times in milliseconds and shares of the kernels' time; the inputs stay out of JSON.
func TestPlanRows(t *testing.T) {
	h100, cfg := lookup(t, "h100-sxm", "llama-3-8b")
	preds, err := Sweep(Config{Profile: h100, Model: cfg}, []int{1, 8}, []int{1, 32})
	require.NoError(t, err)
	rep := NewPlan(Config{Profile: h100, Model: cfg}, preds)
	require.Equal(t, []int{1, 32}, rep.batches())
	require.Len(t, rep.Rows, 4)
	for i, r := range rep.Rows {
		p := preds[i]
		require.Equal(t, p.Config.TP, r.TP)
		require.Equal(t, p.Config.Batch, r.Batch)
		require.InDelta(t, p.Step.Seconds()*1e3, r.TokenLatencyMS, 1e-9)
		require.Len(t, r.AllReduce, len(p.Sites))
		for _, s := range p.Sites {
			site := r.AllReduce["after "+s.After]
			require.InDelta(t, s.Time.Seconds()*1e3, site.MS, 1e-9)
			require.InDelta(t, float64(s.Time)/float64(p.Busy()), site.Share, 1e-12)
		}
	}
	js, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NotContains(t, string(js), "preds")
	require.NotContains(t, string(js), "base")
}
