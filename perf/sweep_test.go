package perf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSweep: the predictions come TP degree by TP degree, each batch within, and a degree
// above 8 spans its hosts; a degree the model cannot be split over names itself.
func TestSweep(t *testing.T) {
	h100, cfg := lookup(t, "h100-sxm", "llama-3-8b")
	preds, err := Sweep(Config{Profile: h100, Model: cfg, TP: 3, Batch: 5, Hosts: 7}, []int{8, 16}, []int{1, 8})
	require.NoError(t, err)
	require.Len(t, preds, 4)
	for i, p := range preds {
		require.Equal(t, []int{8, 8, 16, 16}[i], p.Config.TP)
		require.Equal(t, []int{1, 8, 1, 8}[i], p.Config.Batch)
		require.Equal(t, []int{0, 0, 2, 2}[i], p.Config.Hosts, "TP %d", p.Config.TP)
	}
	_, err = Sweep(Config{Profile: h100, Model: cfg}, []int{8, 9}, []int{1})
	require.ErrorContains(t, err, "TP 9 batch 1: ")
}

// TestFastest: among the predictions of the batch that fit and that keep accepts, the
// shortest step; a faster one that does not fit, or of another batch, is passed over.
func TestFastest(t *testing.T) {
	pred := func(batch, hosts int, step time.Duration, fits bool) Prediction {
		return Prediction{Config: Config{Batch: batch, Hosts: hosts}, Step: step, Fits: fits}
	}
	preds := []Prediction{
		pred(1, 0, 3*time.Millisecond, true),
		pred(1, 0, 1*time.Millisecond, false), // fastest, but does not fit
		pred(8, 0, 1*time.Millisecond, true),  // another batch
		pred(1, 2, 2*time.Millisecond, true),
		pred(1, 2, 2*time.Millisecond, true), // a tie: the first wins
	}
	acrossHosts := func(p Prediction) bool { return p.Config.Hosts > 1 }
	for _, tc := range []struct {
		batch int
		keep  func(Prediction) bool
		want  int
	}{
		{1, nil, 3},
		{1, func(p Prediction) bool { return !acrossHosts(p) }, 0},
		{1, acrossHosts, 3},
		{8, nil, 2},
		{8, acrossHosts, -1},
		{32, nil, -1},
	} {
		require.Equal(t, tc.want, Fastest(preds, tc.batch, tc.keep), "batch %d", tc.batch)
	}
}
