package chart

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The size of every chart; at vgimg's 96 DPI it is 768 × 480 pixels.
const (
	Width  = 8 * vg.Inch
	Height = 5 * vg.Inch
)

// Series is one line: Y over X, named in the legend.
type Series struct {
	Name string
	X, Y []float64
}

// Stack is one layer of stacked bars: Values[i] belongs to bar i.
type Stack struct {
	Name   string
	Values []float64
}

// Lines writes a PNG line chart (one line per series, with points) to path. Every series
// needs at least one point, as many X as Y values, and finite values.
func Lines(path, title, xLabel, yLabel string, series []Series) error {
	if len(series) == 0 {
		return fmt.Errorf("chart: %s: no series to draw", path)
	}
	p := newPlot(title, xLabel, yLabel)
	var leg []legendEntry
	nonNegative := true
	for i, s := range series {
		switch {
		case len(s.X) == 0:
			return fmt.Errorf("chart: %s: series %d (%q) has no points", path, i, s.Name)
		case len(s.X) != len(s.Y):
			return fmt.Errorf("chart: %s: series %d (%q) has %d X values but %d Y values", path, i, s.Name, len(s.X), len(s.Y))
		}
		if err := finite(s.X, "X"); err != nil {
			return fmt.Errorf("chart: %s: series %d (%q): %w", path, i, s.Name, err)
		}
		if err := finite(s.Y, "Y"); err != nil {
			return fmt.Errorf("chart: %s: series %d (%q): %w", path, i, s.Name, err)
		}
		xys := make(plotter.XYs, len(s.X))
		for j := range xys {
			xys[j].X, xys[j].Y = s.X[j], s.Y[j]
			nonNegative = nonNegative && s.Y[j] >= 0
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("chart: %s: series %d (%q): %w", path, i, s.Name, err)
		}
		c := palette(i)
		l.Color, l.Width = c, vg.Points(1.5)
		pts.Color, pts.Shape = c, draw.CircleGlyph{}
		p.Add(l, pts)
		if s.Name != "" {
			leg = append(leg, legendEntry{s.Name, []plot.Thumbnailer{l, pts}})
		}
	}
	if nonNegative {
		p.Y.Min = 0 // so that the ratio of two heights reads true
	}
	var xs []float64
	for _, s := range series {
		xs = append(xs, s.X...)
	}
	slices.Sort(xs)
	if xs = slices.Compact(xs); len(xs) <= 12 { // few X values (TP 1, 2, 4, 8): tick each one
		var ticks plot.ConstantTicks
		for _, x := range xs {
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 4, 64)})
		}
		p.X.Tick.Marker = ticks
	}
	return save(path, p, leg)
}

// StackedBars writes a PNG chart of len(bars) bars, each the stack of every Stack's value
// (the first Stack at the bottom). Every Stack needs one value per bar; values must be finite
// and non-negative, since a negative layer would hide the one below it.
func StackedBars(path, title, yLabel string, bars []string, stacks []Stack) error {
	switch {
	case len(bars) == 0:
		return fmt.Errorf("chart: %s: no bars to draw", path)
	case len(stacks) == 0:
		return fmt.Errorf("chart: %s: no stacks to draw", path)
	}
	p := newPlot(title, "", yLabel)
	// Bars fill 60% of their slot, but never grow wider than 40 points.
	width := min(vg.Points(40), (Width-2*vg.Inch)*0.6/vg.Length(len(bars)))
	var below *plotter.BarChart
	var leg []legendEntry
	totals := make([]float64, len(bars))
	for i, s := range stacks {
		if len(s.Values) != len(bars) {
			return fmt.Errorf("chart: %s: stack %d (%q) has %d values for %d bars", path, i, s.Name, len(s.Values), len(bars))
		}
		if err := finite(s.Values, "value"); err != nil {
			return fmt.Errorf("chart: %s: stack %d (%q): %w", path, i, s.Name, err)
		}
		for j, v := range s.Values {
			if v < 0 {
				return fmt.Errorf("chart: %s: stack %d (%q): value %d (bar %q) is negative (%v)", path, i, s.Name, j, bars[j], v)
			}
			totals[j] += v
		}
		b, err := plotter.NewBarChart(plotter.Values(s.Values), width)
		if err != nil {
			return fmt.Errorf("chart: %s: stack %d (%q): %w", path, i, s.Name, err)
		}
		b.Color, b.LineStyle.Width = palette(i), 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		if s.Name != "" {
			leg = append(leg, legendEntry{s.Name, []plot.Thumbnailer{b}})
		}
	}
	p.NominalX(bars...)
	p.Y.Min = 0
	p.Y.Max = 1.05 * slices.Max(totals) // headroom above the tallest bar
	slices.Reverse(leg)                 // the legend reads top-down, as the stack does
	return save(path, p, leg)
}

// legendEntry is one line of the legend drawn beside the plot.
type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xLabel, yLabel
	p.Add(plotter.NewGrid())
	return p
}

// save draws p with its legend on the right and writes the PNG to path.
func save(path string, p *plot.Plot, entries []legendEntry) (err error) {
	// gonum/plot panics on some degenerate input instead of returning an error; a chart is
	// a by-product of a report, so that must not take the command down.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chart: %s: drawing failed: %v", path, r)
		}
	}()
	img := vgimg.New(Width, Height)
	dc := draw.New(img)
	leg := plot.NewLegend()
	leg.Top, leg.Left, leg.Padding = true, true, vg.Points(3)
	for _, e := range entries {
		leg.Add(e.name, e.thumbs...)
	}
	pad := vg.Points(10)
	var legW vg.Length
	if len(entries) > 0 {
		r := leg.Rectangle(dc)
		legW = r.Max.X - r.Min.X + pad
	}
	if legW > Width/2 {
		return fmt.Errorf("chart: %s: the legend's names are too long to fit beside the plot", path)
	}
	p.Draw(draw.Crop(dc, pad, -legW-pad, pad, -pad))
	if len(entries) > 0 {
		leg.Draw(draw.Crop(dc, Width-legW, -pad, pad, -2*pad))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	_, werr := vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path) // no half-written PNG left behind
		return fmt.Errorf("chart: writing %s: %w", path, werr)
	}
	return nil
}

// finite reports the first NaN or infinite value of xs.
func finite(xs []float64, what string) error {
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s %d is %v: values must be finite", what, i, x)
		}
	}
	return nil
}

// palette returns the i-th color: Tableau 10 and two more, distinct hues for up to 12 lines
// or stack layers; past 12 the hues repeat darker, so neighbours still differ.
func palette(i int) color.Color {
	colors := [...]color.RGBA{
		{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x76, 0xb7, 0xb2, 0xff},
		{0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff},
		{0x9c, 0x75, 0x5f, 0xff}, {0xba, 0xb0, 0xac, 0xff}, {0x1f, 0x3a, 0x5f, 0xff}, {0x8c, 0xd1, 0x7d, 0xff},
	}
	c := colors[i%len(colors)]
	for range i / len(colors) {
		c.R, c.G, c.B = c.R*3/4, c.G*3/4, c.B*3/4
	}
	return c
}
