package trace

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tpslice/tpslice/device"
)

// DefaultMaxEvents is how many kernels a Recorder keeps when Config.MaxEvents is 0: about
// 100 MB of events at most, and as many as chrome://tracing loads comfortably.
const DefaultMaxEvents = 1 << 20

// Config configures a Recorder.
type Config struct {
	// MaxEvents bounds the kernels kept; later ones are dropped and counted (Dropped).
	// 0 means DefaultMaxEvents.
	MaxEvents int
	// ProcessName labels device id's process in the timeline, e.g. "rank 0"; nil labels it
	// "device N".
	ProcessName func(device int) string
}

// Recorder is a device.Tracer that keeps the kernels the streams of a node run, for
// WriteChrome. Its methods are safe for concurrent use.
type Recorder struct {
	start       time.Time
	max         int
	processName func(int) string

	mu      sync.Mutex
	events  []event // append-only: written once, before the lock that publishes them
	dropped int64
}

// event is one kernel as the recorder keeps it: not the Kernel itself, whose closures would
// keep its buffers alive.
type event struct {
	stream     *device.Stream
	name       string
	detail     string
	grid       int
	start, end time.Duration // since the recorder's start
	err        error
	skipped    bool
}

// NewRecorder returns an empty recorder whose timeline starts now.
func NewRecorder(cfg Config) *Recorder {
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = DefaultMaxEvents
	}
	if cfg.ProcessName == nil {
		cfg.ProcessName = func(d int) string { return "device " + strconv.Itoa(d) }
	}
	return &Recorder{start: time.Now(), max: cfg.MaxEvents, processName: cfg.ProcessName}
}

// KernelDone records one kernel (device.Tracer); past MaxEvents it counts a drop instead.
func (r *Recorder) KernelDone(span device.KernelSpan) {
	ev := event{
		stream: span.Stream, name: span.Kernel.Name, detail: span.Kernel.Detail, grid: span.Kernel.Grid,
		start: span.Start.Sub(r.start), end: span.End.Sub(r.start), err: span.Err, skipped: span.Skipped,
	}
	r.mu.Lock()
	if len(r.events) < r.max {
		r.events = append(r.events, ev)
	} else {
		r.dropped++
	}
	r.mu.Unlock()
}

// Start returns the instant the timeline's zero stands for.
func (r *Recorder) Start() time.Time { return r.start }

// Len returns how many kernels the recorder kept.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Dropped returns how many kernels arrived after MaxEvents were kept and were not recorded.
func (r *Recorder) Dropped() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// snapshot returns the events kept so far (never written again) and the drop count.
func (r *Recorder) snapshot() ([]event, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[:len(r.events):len(r.events)], r.dropped
}

// Category returns a kernel's trace category: "comm" for collectives (names starting with
// allreduce, allgather or reducescatter, fused variants such as "allreduce+rmsnorm.twoshot"
// included), "compute" for everything else.
func Category(kernelName string) string {
	for _, p := range [...]string{"allreduce", "allgather", "reducescatter"} {
		if strings.HasPrefix(kernelName, p) {
			return "comm"
		}
	}
	return "compute"
}

// chromeEvent is one entry of traceEvents in the Chrome trace-event format.
type chromeEvent struct {
	Name  string   `json:"name"`
	Cat   string   `json:"cat,omitempty"`
	Ph    string   `json:"ph"`
	Ts    float64  `json:"ts"`
	Dur   *float64 `json:"dur,omitempty"` // complete events only, where 0 is a valid duration
	Pid   int      `json:"pid"`
	Tid   int      `json:"tid"`
	Cname string   `json:"cname,omitempty"`
	Args  any      `json:"args,omitempty"`
}

// kernelArgs are a kernel event's args: what the viewer shows when the slice is selected.
type kernelArgs struct {
	Grid    int    `json:"grid"`
	Detail  string `json:"detail,omitempty"`
	Skipped bool   `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// threadKey identifies a stream's thread in the timeline.
type threadKey struct {
	pid, tid int
}

// WriteChrome writes the kernels recorded so far as a Chrome trace-event JSON object
// ({"traceEvents": [...], "displayTimeUnit": "ns"}) that ui.perfetto.dev and chrome://tracing
// load. Every device is a process and every stream a thread of it:
//
//   - "pid" is the device id + 1 (Perfetto treats pid 0 as the kernel's idle task); the
//     process_name metadata names the device as Config.ProcessName does, and
//     process_sort_index orders processes by device id;
//   - "tid" is a small integer, unique in the trace, given to streams in order of device id,
//     stream name and first kernel; thread_name is the stream's name and SM budget;
//   - each kernel is a complete event ("ph": "X") with "ts" and "dur" in microseconds since
//     the recorder was created, "cat" from Category and args {"grid", "detail" (when set),
//     "error" and "skipped" (when it failed or was skipped)}.
//
// Metadata events come first, then the kernels sorted by start time. "otherData" carries
// the number of events kept and dropped. Turn tracing off first (Node.SetTracer(nil)) for
// a complete picture: kernels recorded while WriteChrome runs are left out.
func (r *Recorder) WriteChrome(w io.Writer) error {
	events, dropped := r.snapshot()

	// Streams, in order of their first event, then numbered by device, name, first event.
	type streamInfo struct {
		s     *device.Stream
		first int
	}
	var streams []streamInfo
	index := map[*device.Stream]int{}
	for i, ev := range events {
		if _, ok := index[ev.stream]; !ok {
			index[ev.stream] = len(streams)
			streams = append(streams, streamInfo{s: ev.stream, first: i})
		}
	}
	order := slices.Clone(streams)
	slices.SortFunc(order, func(a, b streamInfo) int {
		return cmp.Or(cmp.Compare(a.s.Device().ID(), b.s.Device().ID()), strings.Compare(a.s.Name(), b.s.Name()), cmp.Compare(a.first, b.first))
	})
	thread := make([]threadKey, len(streams))
	var meta []chromeEvent
	lastDev := -1
	for i, st := range order {
		d := st.s.Device()
		pid, tid := d.ID()+1, i+1
		thread[index[st.s]] = threadKey{pid, tid}
		if d.ID() != lastDev {
			lastDev = d.ID()
			meta = append(meta,
				chromeEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": r.processName(d.ID())}},
				chromeEvent{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": d.ID()}})
		}
		meta = append(meta,
			chromeEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid,
				Args: map[string]any{"name": fmt.Sprintf("%s (%d of %d SMs)", st.s.Name(), st.s.SMBudget(), d.NumSMs())}},
			chromeEvent{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"sort_index": tid}})
	}

	// Kernels by start time; ties (a skipped kernel and its successor) keep stream order.
	byStart := make([]int, len(events))
	for i := range byStart {
		byStart[i] = i
	}
	slices.SortStableFunc(byStart, func(a, b int) int {
		ea, eb := &events[a], &events[b]
		ta, tb := thread[index[ea.stream]], thread[index[eb.stream]]
		return cmp.Or(cmp.Compare(ea.start, eb.start), cmp.Compare(ta.pid, tb.pid), cmp.Compare(ta.tid, tb.tid))
	})

	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString(`{"traceEvents":[`); err != nil {
		return fmt.Errorf("trace: write: %w", err)
	}
	n := 0
	put := func(ev chromeEvent) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("trace: encode event %q: %w", ev.Name, err)
		}
		if n > 0 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
		n++
		if _, err := bw.Write(b); err != nil {
			return fmt.Errorf("trace: write: %w", err)
		}
		return nil
	}
	for _, ev := range meta {
		if err := put(ev); err != nil {
			return err
		}
	}
	for _, i := range byStart {
		ev := &events[i]
		th := thread[index[ev.stream]]
		args := kernelArgs{Grid: ev.grid, Detail: ev.detail, Skipped: ev.skipped}
		cname := ""
		if ev.err != nil {
			args.Error, cname = ev.err.Error(), "terrible"
			if ev.skipped {
				cname = "bad"
			}
		}
		dur := micros(ev.end - ev.start)
		ce := chromeEvent{Name: ev.name, Cat: Category(ev.name), Ph: "X", Ts: micros(ev.start), Dur: &dur,
			Pid: th.pid, Tid: th.tid, Cname: cname, Args: args}
		if err := put(ce); err != nil {
			return err
		}
	}
	other, err := json.Marshal(map[string]string{
		"producer":       "tpslice trace.Recorder",
		"events":         strconv.Itoa(len(events)),
		"dropped_events": strconv.FormatInt(dropped, 10),
	})
	if err != nil {
		return fmt.Errorf("trace: encode otherData: %w", err)
	}
	fmt.Fprintf(bw, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":%s}\n", other)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("trace: write: %w", err)
	}
	return nil
}

// micros converts a duration to the format's microseconds, keeping nanoseconds.
func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
