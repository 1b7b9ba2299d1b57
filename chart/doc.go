// Package chart draws the PNG charts that tpslice's reports write with --plot: line charts
// (latency against TP degree, one line per batch size) and stacked bars (where a token's time
// goes). It is a thin layer over gonum.org/v1/plot that validates its input, so that a
// command passes plain slices and gets an error naming the bad series or value instead of a
// malformed chart or a panic.
//
// Every chart is Width × Height points at 96 DPI (768 × 480 pixels), with its legend to the
// right of the plot so that it never hides a line or a bar.
package chart
