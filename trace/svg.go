package trace

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// The SVG timeline's geometry, in pixels.
const (
	svgWidth   = 880 // the whole picture
	svgLabels  = 170 // the lane labels left of the plot
	svgMargin  = 16
	svgLane    = 20 // one lane's height; its spans leave 3 px above and below
	svgTop     = 34 // above the first lane: the title
	svgAxis    = 28 // below the last lane: the time axis
	svgLegend  = 18 // one legend row
	svgMinText = 60 // a span this wide or wider carries its name
)

// svgPalette colours the spans, one colour per kernel name in order of first appearance
// (cycling past its end); a span that failed or was skipped is outlined in svgFailed.
var svgPalette = [...]string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac", "#ff9da7", "#e15759"}

const svgFailed = "#d62728"

// svgLaneKey is one lane: a thread of a process.
type svgLaneKey struct{ pid, tid int }

// svgSpan is one complete event of the trace, in microseconds.
type svgSpan struct {
	name       string
	lane       svgLaneKey
	start, dur float64
	detail     string
	failed     bool
}

// WriteSVG writes the kernels the recorder kept as an SVG timeline titled title:
// WriteChrome's trace drawn by RenderSVG.
func (r *Recorder) WriteSVG(w io.Writer, title string) error {
	var buf bytes.Buffer
	if err := r.WriteChrome(&buf); err != nil {
		return err
	}
	return RenderSVG(w, &buf, title)
}

// RenderSVG reads a Chrome trace-event JSON object (as WriteChrome writes it) from r and
// writes its complete events ("ph": "X") to w as an SVG timeline titled title: one lane per
// thread (a stream), labelled "process · thread" and ordered by process id then thread id,
// one bar per event coloured by its name (a legend below maps colours to names), a time
// axis in µs from the first event's start. A bar names its event when it is wide enough,
// and its tooltip gives the name, duration and args.detail; an event with args.error is
// outlined in red. Other events (metadata aside) are ignored. A trace that is not such
// JSON, has no complete event, or has one with a negative duration is refused, naming it.
func RenderSVG(w io.Writer, r io.Reader, title string) error {
	spans, names, err := readSpans(r)
	if err != nil {
		return fmt.Errorf("trace: svg: %w", err)
	}
	lanes := laneOrder(spans)
	row := map[svgLaneKey]int{}
	for i, l := range lanes {
		row[l] = i
	}
	colour := map[string]string{}
	var kinds []string
	for _, s := range spans {
		if _, ok := colour[s.name]; !ok {
			colour[s.name] = svgPalette[len(kinds)%len(svgPalette)]
			kinds = append(kinds, s.name)
		}
	}

	t0, t1 := math.Inf(1), math.Inf(-1)
	for _, s := range spans {
		t0, t1 = min(t0, s.start), max(t1, s.start+s.dur)
	}
	span := max(t1-t0, 1e-3) // a trace of zero-length events still has an axis
	plotX, plotW := float64(svgMargin+svgLabels), float64(svgWidth-2*svgMargin-svgLabels)
	x := func(us float64) float64 { return plotX + (us-t0)/span*plotW }
	lanesBottom := svgTop + len(lanes)*svgLane
	legendRows := (len(kinds) + 2) / 3
	height := lanesBottom + svgAxis + legendRows*svgLegend + svgMargin

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgWidth, height)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", svgMargin, svgTop-14, esc(title))
	for i, l := range lanes {
		y := svgTop + i*svgLane
		if i%2 == 0 {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%g" height="%d" fill="#f4f4f4"/>`+"\n", svgMargin, y, float64(svgLabels)+plotW, svgLane)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", svgMargin+4, y+14, esc(names[l]))
	}
	ticks(&b, t0, span, x, lanesBottom)
	for _, s := range spans {
		y := svgTop + row[s.lane]*svgLane + 3
		x0, wd := x(s.start), max(s.dur/span*plotW, 0.5)
		stroke := ""
		if s.failed {
			stroke = ` stroke="` + svgFailed + `" stroke-width="2"`
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"%s><title>%s</title></rect>`+"\n",
			x0, y, wd, svgLane-6, colour[s.name], stroke, esc(s.tooltip()))
		if wd >= svgMinText {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="white">%s</text>`+"\n", x0+3, y+11, esc(clip(s.name, int(wd/6.5))))
		}
	}
	for i, k := range kinds {
		lx, ly := svgMargin+(i%3)*(svgWidth-2*svgMargin)/3, lanesBottom+svgAxis+(i/3)*svgLegend
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, ly, colour[k], lx+16, ly+10, esc(k))
	}
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("trace: svg: write: %w", err)
	}
	return nil
}

// readSpans reads a trace's complete events and its lanes' labels.
func readSpans(r io.Reader) ([]svgSpan, map[svgLaneKey]string, error) {
	var doc struct {
		TraceEvents []struct {
			Name string   `json:"name"`
			Ph   string   `json:"ph"`
			Ts   float64  `json:"ts"`
			Dur  *float64 `json:"dur"`
			Pid  int      `json:"pid"`
			Tid  int      `json:"tid"`
			Args struct {
				Name   string `json:"name"` // process_name, thread_name
				Detail string `json:"detail"`
				Error  string `json:"error"`
			} `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("not a Chrome trace-event JSON object: %w", err)
	}
	procs, threads := map[int]string{}, map[svgLaneKey]string{}
	var spans []svgSpan
	for i, ev := range doc.TraceEvents {
		switch {
		case ev.Ph == "M" && ev.Name == "process_name":
			procs[ev.Pid] = ev.Args.Name
		case ev.Ph == "M" && ev.Name == "thread_name":
			threads[svgLaneKey{ev.Pid, ev.Tid}] = ev.Args.Name
		case ev.Ph == "X":
			if ev.Dur == nil || *ev.Dur < 0 || math.IsNaN(*ev.Dur) {
				return nil, nil, fmt.Errorf("event %d (%q): want a duration ≥ 0", i, ev.Name)
			}
			spans = append(spans, svgSpan{name: ev.Name, lane: svgLaneKey{ev.Pid, ev.Tid}, start: ev.Ts, dur: *ev.Dur,
				failed: ev.Args.Error != "", detail: ev.Args.Detail})
		}
	}
	if len(spans) == 0 {
		return nil, nil, errors.New("the trace has no complete (\"X\") events to draw")
	}
	names := map[svgLaneKey]string{}
	for _, s := range spans {
		proc := cmp.Or(procs[s.lane.pid], fmt.Sprintf("pid %d", s.lane.pid))
		thread := cmp.Or(threads[s.lane], fmt.Sprintf("tid %d", s.lane.tid))
		names[s.lane] = proc + " · " + thread
	}
	return spans, names, nil
}

// laneOrder lists the lanes of spans by process id, then thread id.
func laneOrder(spans []svgSpan) []svgLaneKey {
	var lanes []svgLaneKey
	for _, s := range spans {
		if !slices.Contains(lanes, s.lane) {
			lanes = append(lanes, s.lane)
		}
	}
	slices.SortFunc(lanes, func(a, b svgLaneKey) int { return cmp.Or(cmp.Compare(a.pid, b.pid), cmp.Compare(a.tid, b.tid)) })
	return lanes
}

// ticks draws the time axis under the lanes: about six ticks at a round step in µs from t0.
func ticks(b *strings.Builder, t0, span float64, x func(float64) float64, y int) {
	step := math.Pow(10, math.Floor(math.Log10(span/6)))
	for _, m := range [...]float64{1, 2, 5, 10} {
		if span/(step*m) <= 8 {
			step *= m
			break
		}
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555"/>`+"\n", x(t0), y, x(t0+span), y)
	for k := 0; float64(k)*step <= span*(1+1e-9); k++ {
		tx := x(t0 + float64(k)*step)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555"/><text x="%.1f" y="%d" text-anchor="middle">%s µs</text>`+"\n",
			tx, y, tx, y+4, tx, y+16, trimFloat(float64(k)*step))
	}
}

// tooltip is a span's hover text: its name, duration and detail.
func (s svgSpan) tooltip() string {
	t := fmt.Sprintf("%s: %s µs", s.name, trimFloat(s.dur))
	if s.detail != "" {
		t += " (" + s.detail + ")"
	}
	if s.failed {
		t += " [failed]"
	}
	return t
}

// trimFloat writes v with at most three significant decimals and no trailing zeros.
func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// clip shortens s to at most n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 2 {
		return ""
	}
	return string(r[:n-1]) + "…"
}

// esc escapes text for an SVG element's content or attribute.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
