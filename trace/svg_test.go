package trace_test

import (
	"bytes"
	"encoding/xml"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/trace"
)

// svgDoc is the part of RenderSVG's output the tests read: every rect and every text.
type svgDoc struct {
	Rects []struct {
		Fill   string `xml:"fill,attr"`
		Stroke string `xml:"stroke,attr"`
		X      string `xml:"x,attr"`
		Width  string `xml:"width,attr"`
		Title  string `xml:"title"`
	} `xml:"rect"`
	Texts []string `xml:"text"`
}

// tinyTrace has two ranks with a comm stream each, an all-reduce on both (the second
// failed), a gemm on rank 1's compute stream, and an instant event that is not drawn.
const tinyTrace = `{"traceEvents":[
{"name":"process_name","ph":"M","ts":0,"pid":1,"args":{"name":"rank 0"}},
{"name":"process_name","ph":"M","ts":0,"pid":2,"args":{"name":"rank 1"}},
{"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":1,"args":{"name":"comm (2 of 8 SMs)"}},
{"name":"thread_name","ph":"M","ts":0,"pid":2,"tid":2,"args":{"name":"comm (2 of 8 SMs)"}},
{"name":"thread_name","ph":"M","ts":0,"pid":2,"tid":3,"args":{"name":"compute (6 of 8 SMs)"}},
{"name":"allreduce.oneshot","cat":"comm","ph":"X","ts":10,"dur":40,"pid":1,"tid":1,"args":{"grid":2,"detail":"count=4096 f32"}},
{"name":"gemm<q&k>","cat":"compute","ph":"X","ts":12,"dur":20,"pid":2,"tid":3,"args":{"grid":6}},
{"name":"allreduce.oneshot","cat":"comm","ph":"X","ts":14,"dur":36,"pid":2,"tid":2,"args":{"grid":2,"error":"rank 1: deadline"}},
{"name":"mark","ph":"i","ts":20,"pid":1,"tid":1}
]}`

func renderSVG(t *testing.T, in, title string) svgDoc {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, trace.RenderSVG(&out, strings.NewReader(in), title))
	var doc svgDoc
	require.NoError(t, xml.Unmarshal(out.Bytes(), &doc), "the SVG is well-formed XML:\n%s", out.String())
	return doc
}

func TestRenderSVG(t *testing.T) {
	doc := renderSVG(t, tinyTrace, "one call <n=2>")
	require.Contains(t, doc.Texts, "one call <n=2>", "the title, escaped and read back")
	for _, lane := range []string{"rank 0 · comm (2 of 8 SMs)", "rank 1 · comm (2 of 8 SMs)", "rank 1 · compute (6 of 8 SMs)"} {
		require.Contains(t, doc.Texts, lane)
	}
	var spans []string
	fills := map[string]string{}
	var failed []string
	for _, r := range doc.Rects {
		if r.Title == "" {
			continue // background, lane stripes, legend swatches
		}
		spans = append(spans, r.Title)
		name, _, _ := strings.Cut(r.Title, ":")
		if prev, ok := fills[name]; ok {
			require.Equal(t, prev, r.Fill, "every %s span has one colour", name)
		}
		fills[name] = r.Fill
		if r.Stroke != "" {
			failed = append(failed, r.Title)
		}
	}
	require.Equal(t, []string{
		"allreduce.oneshot: 40 µs (count=4096 f32)",
		"gemm<q&k>: 20 µs",
		"allreduce.oneshot: 36 µs [failed]",
	}, spans, "one bar per complete event, in file order; the instant event is not drawn")
	require.NotEqual(t, fills["allreduce.oneshot"], fills["gemm<q&k>"], "kinds differ in colour")
	require.Equal(t, []string{"allreduce.oneshot: 36 µs [failed]"}, failed)
	require.Contains(t, doc.Texts, "0 µs", "the axis starts at the first event")
	require.Contains(t, doc.Texts, "40 µs", "and reaches the last one's end (50 - 10)")
	require.Contains(t, doc.Texts, "gemm<q&k>", "the legend names every kind")
}

func TestRenderSVGRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", `{"traceEvents": [`, "not a Chrome trace-event JSON object"},
		{"no kernels", `{"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"rank 0"}}]}`, "no complete"},
		{"negative duration", `{"traceEvents":[{"name":"k","ph":"X","ts":1,"dur":-2,"pid":1,"tid":1}]}`, `event 0 ("k"): want a duration ≥ 0`},
		{"no duration", `{"traceEvents":[{"name":"k","ph":"X","ts":1,"pid":1,"tid":1}]}`, `event 0 ("k")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := trace.RenderSVG(&bytes.Buffer{}, strings.NewReader(tc.in), "x")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestRecorderWriteSVG draws what a recorder kept on a real node: each device's stream a
// lane named as Config.ProcessName and the stream name.
func TestRecorderWriteSVG(t *testing.T) {
	n := newNode(t, 2, 2)
	rec := trace.NewRecorder(trace.Config{ProcessName: func(d int) string { return "rank " + strconv.Itoa(d) }})
	n.SetTracer(rec)
	for dev := range 2 {
		s := newStream(t, n, dev, "comm", 0)
		require.NoError(t, s.Launch(sleeper("allreduce.star", "", 2, time.Millisecond)))
		require.NoError(t, s.Synchronize())
	}
	n.SetTracer(nil)
	var out bytes.Buffer
	require.NoError(t, rec.WriteSVG(&out, "star"))
	var doc svgDoc
	require.NoError(t, xml.Unmarshal(out.Bytes(), &doc))
	require.Contains(t, doc.Texts, "rank 0 · comm (2 of 2 SMs)")
	require.Contains(t, doc.Texts, "rank 1 · comm (2 of 2 SMs)")
	bars := 0
	for _, r := range doc.Rects {
		if strings.HasPrefix(r.Title, "allreduce.star: ") {
			bars++
		}
	}
	require.Equal(t, 2, bars)
}
