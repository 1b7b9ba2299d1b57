package chart

import (
	"fmt"
	"path/filepath"
	"slices"
)

// TPPoint is one TP degree × batch size of a bench or plan report, as TPSweep draws it.
type TPPoint struct {
	TP, Batch int
	Latency   float64            // ms per token (bench: p50)
	Breakdown map[string]float64 // ms per step, by class
}

// TPSweep writes into dir latency_vs_tp.png, one line per batch size over the TP degrees,
// and breakdown.png, one stacked bar per point with its layers in keys' order.
func TPSweep(dir, title string, points []TPPoint, keys []string) error {
	var series []Series
	var bars []string
	for _, p := range points {
		name := fmt.Sprintf("batch %d", p.Batch)
		i := slices.IndexFunc(series, func(s Series) bool { return s.Name == name })
		if i < 0 {
			i = len(series)
			series = append(series, Series{Name: name})
		}
		series[i].X, series[i].Y = append(series[i].X, float64(p.TP)), append(series[i].Y, p.Latency)
		bars = append(bars, fmt.Sprintf("tp%d\nb%d", p.TP, p.Batch)) // two lines: a dozen bars fit
	}
	if err := Lines(filepath.Join(dir, "latency_vs_tp.png"), title+": decode token latency", "TP degree", "ms per token", series); err != nil {
		return err
	}
	var stacks []Stack
	for _, k := range keys {
		s := Stack{Name: k}
		for _, p := range points {
			s.Values = append(s.Values, p.Breakdown[k])
		}
		stacks = append(stacks, s)
	}
	return StackedBars(filepath.Join(dir, "breakdown.png"), title+": a decode step by op class", "ms per step", bars, stacks)
}
