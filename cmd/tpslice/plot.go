package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/tpslice/tpslice/chart"
)

// tpPoint is one TP degree × batch size of a bench or plan report, as the charts draw it.
type tpPoint struct {
	TP, Batch int
	Latency   float64            // ms per token (bench: p50)
	Breakdown map[string]float64 // ms per step, by class
}

// plotTP writes into dir latency_vs_tp.png, one line per batch size over the TP degrees, and
// breakdown.png, one stacked bar per point with its layers in keys' order.
func plotTP(dir, title string, points []tpPoint, keys []string) error {
	var series []chart.Series
	var bars []string
	for _, p := range points {
		name := fmt.Sprintf("batch %d", p.Batch)
		i := slices.IndexFunc(series, func(s chart.Series) bool { return s.Name == name })
		if i < 0 {
			i = len(series)
			series = append(series, chart.Series{Name: name})
		}
		series[i].X, series[i].Y = append(series[i].X, float64(p.TP)), append(series[i].Y, p.Latency)
		bars = append(bars, fmt.Sprintf("tp%d\nb%d", p.TP, p.Batch)) // two lines: a dozen bars fit
	}
	if err := chart.Lines(filepath.Join(dir, "latency_vs_tp.png"), title+": decode token latency", "TP degree", "ms per token", series); err != nil {
		return err
	}
	var stacks []chart.Stack
	for _, k := range keys {
		s := chart.Stack{Name: k}
		for _, p := range points {
			s.Values = append(s.Values, p.Breakdown[k])
		}
		stacks = append(stacks, s)
	}
	return chart.StackedBars(filepath.Join(dir, "breakdown.png"), title+": a decode step by op class", "ms per step", bars, stacks)
}
