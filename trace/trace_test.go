package trace_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/trace"
)

// chromeTrace is the JSON object WriteChrome writes, as a viewer reads it.
type chromeTrace struct {
	TraceEvents     []chromeEvent     `json:"traceEvents"`
	DisplayTimeUnit string            `json:"displayTimeUnit"`
	OtherData       map[string]string `json:"otherData"`
}

type chromeEvent struct {
	Name  string         `json:"name"`
	Cat   string         `json:"cat"`
	Ph    string         `json:"ph"`
	Ts    *float64       `json:"ts"`
	Dur   *float64       `json:"dur"`
	Pid   *int           `json:"pid"`
	Tid   *int           `json:"tid"`
	Cname string         `json:"cname"`
	Args  map[string]any `json:"args"`
}

type thread struct{ pid, tid int }

// parsed is a trace checked for the structure every viewer needs, indexed for assertions.
type parsed struct {
	chromeTrace
	processes map[int]string    // pid → process_name
	threads   map[thread]string // (pid, tid) → thread_name
	kernels   []chromeEvent     // the "X" events, in file order
}

// parse unmarshals a trace and checks what Perfetto and chrome://tracing rely on: the
// object form, metadata before kernels, every kernel on a named thread of a named process,
// ts/dur present and non-negative, kernels sorted by ts, tids unique in the trace.
func parse(t *testing.T, data []byte) parsed {
	t.Helper()
	var p parsed
	require.NoError(t, json.Unmarshal(data, &p.chromeTrace), "the trace is JSON")
	require.Equal(t, "ns", p.DisplayTimeUnit)
	require.NotNil(t, p.TraceEvents, "traceEvents is an array, even when empty")
	p.processes, p.threads = map[int]string{}, map[thread]string{}
	tidPid := map[int]int{}
	for i, ev := range p.TraceEvents {
		require.NotNil(t, ev.Pid, "event %d has a pid", i)
		require.NotNil(t, ev.Ts, "event %d has a ts", i)
		require.Positive(t, *ev.Pid, "event %d: pid 0 is the idle task to Perfetto", i)
		switch ev.Ph {
		case "M":
			require.Empty(t, p.kernels, "metadata comes before kernels")
			switch ev.Name {
			case "process_name":
				p.processes[*ev.Pid] = ev.Args["name"].(string)
			case "thread_name":
				require.NotNil(t, ev.Tid)
				require.Positive(t, *ev.Tid)
				if pid, ok := tidPid[*ev.Tid]; ok {
					require.Equal(t, pid, *ev.Pid, "tid %d is unique in the trace", *ev.Tid)
				}
				tidPid[*ev.Tid] = *ev.Pid
				p.threads[thread{*ev.Pid, *ev.Tid}] = ev.Args["name"].(string)
			case "process_sort_index", "thread_sort_index":
				require.Contains(t, ev.Args, "sort_index")
			default:
				t.Fatalf("unexpected metadata event %q", ev.Name)
			}
		case "X":
			require.NotNil(t, ev.Tid)
			require.NotNil(t, ev.Dur, "complete event %q has a dur", ev.Name)
			require.GreaterOrEqual(t, *ev.Dur, 0.0)
			require.GreaterOrEqual(t, *ev.Ts, 0.0)
			require.Contains(t, p.processes, *ev.Pid, "kernel %q is in a named process", ev.Name)
			require.Contains(t, p.threads, thread{*ev.Pid, *ev.Tid}, "kernel %q is on a named thread", ev.Name)
			if n := len(p.kernels); n > 0 {
				require.GreaterOrEqual(t, *ev.Ts, *p.kernels[n-1].Ts, "kernels sorted by ts")
			}
			p.kernels = append(p.kernels, ev)
		default:
			t.Fatalf("unexpected phase %q", ev.Ph)
		}
	}
	return p
}

// byThread groups kernels per thread, in order, and checks that a stream's kernels do not
// overlap (a stream runs one at a time).
func (p parsed) byThread(t *testing.T) map[thread][]chromeEvent {
	t.Helper()
	out := map[thread][]chromeEvent{}
	for _, ev := range p.kernels {
		th := thread{*ev.Pid, *ev.Tid}
		if prev := out[th]; len(prev) > 0 {
			last := prev[len(prev)-1]
			require.LessOrEqual(t, *last.Ts+*last.Dur, *ev.Ts+1e-3, "kernels on %s overlap", p.threads[th])
		}
		out[th] = append(out[th], ev)
	}
	return out
}

func newNode(t *testing.T, devices, sms int) *device.Node {
	t.Helper()
	n, err := device.NewNode(device.NodeConfig{Devices: devices, SMs: sms})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n
}

func newStream(t *testing.T, n *device.Node, dev int, name string, budget int) *device.Stream {
	t.Helper()
	d, err := n.Device(dev)
	require.NoError(t, err)
	s, err := d.NewStream(name, budget)
	require.NoError(t, err)
	return s
}

func sleeper(name, detail string, grid int, d time.Duration) device.Kernel {
	return device.Kernel{Name: name, Detail: detail, Grid: grid, Block: func(device.Block) error {
		time.Sleep(d)
		return nil
	}}
}

func write(t *testing.T, r *trace.Recorder) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, r.WriteChrome(&buf))
	return buf.Bytes()
}

func TestWriteChromeTwoDevices(t *testing.T) {
	n := newNode(t, 2, 4)
	rec := trace.NewRecorder(trace.Config{ProcessName: func(d int) string { return fmt.Sprintf("rank %d", d) }})
	n.SetTracer(rec)
	const nap = 2 * time.Millisecond
	for dev := range 2 {
		compute := newStream(t, n, dev, "compute", 0)
		comm := newStream(t, n, dev, "comm", 2)
		gemmDone := device.NewEvent()
		require.NoError(t, compute.Launch(sleeper("gemm", "m=8 n=64 k=64", 4, nap)))
		require.NoError(t, compute.Record(gemmDone))
		require.NoError(t, comm.WaitEvent(gemmDone))
		require.NoError(t, comm.Launch(sleeper("allreduce.oneshot", "count=4096 f32", 2, nap)))
		require.NoError(t, compute.Launch(sleeper("rmsnorm", "", 1, nap)))
		require.NoError(t, comm.Synchronize())
		require.NoError(t, compute.Synchronize())
	}
	n.SetTracer(nil)
	require.Equal(t, 6, rec.Len())
	require.Zero(t, rec.Dropped())

	p := parse(t, write(t, rec))
	require.Equal(t, map[int]string{1: "rank 0", 2: "rank 1"}, p.processes, "pid = device id + 1")
	require.Equal(t, map[thread]string{
		{1, 1}: "comm (2 of 4 SMs)", {1, 2}: "compute (4 of 4 SMs)",
		{2, 3}: "comm (2 of 4 SMs)", {2, 4}: "compute (4 of 4 SMs)",
	}, p.threads, "tids by device, then stream name")
	require.Equal(t, map[string]string{"producer": "tpslice trace.Recorder", "events": "6", "dropped_events": "0"}, p.OtherData)

	threads := p.byThread(t)
	for _, pid := range []int{1, 2} {
		comm, compute := threads[thread{pid, 2*pid - 1}], threads[thread{pid, 2 * pid}]
		require.Len(t, comm, 1)
		require.Len(t, compute, 2)
		gemm, norm, ar := compute[0], compute[1], comm[0]
		require.Equal(t, "gemm", gemm.Name)
		require.Equal(t, "rmsnorm", norm.Name)
		require.Equal(t, "allreduce.oneshot", ar.Name)
		require.Equal(t, "compute", gemm.Cat)
		require.Equal(t, "comm", ar.Cat)
		require.Equal(t, map[string]any{"grid": 4.0, "detail": "m=8 n=64 k=64"}, gemm.Args)
		require.Equal(t, map[string]any{"grid": 2.0, "detail": "count=4096 f32"}, ar.Args)
		require.Equal(t, map[string]any{"grid": 1.0}, norm.Args, "no detail when the kernel has none")
		for _, k := range []chromeEvent{gemm, norm, ar} {
			require.GreaterOrEqual(t, *k.Dur, float64(nap.Microseconds()), "%s slept %v", k.Name, nap)
		}
		require.GreaterOrEqual(t, *ar.Ts, *gemm.Ts+*gemm.Dur, "the all-reduce waited for the GEMM's event")
	}
	// Device 1's work was launched after device 0 had synchronized.
	require.Greater(t, *threads[thread{2, 4}][0].Ts, *threads[thread{1, 2}][1].Ts)
}

func TestWriteChromeFailedAndSkipped(t *testing.T) {
	n := newNode(t, 1, 2)
	s := newStream(t, n, 0, "compute", 0)
	rec := trace.NewRecorder(trace.Config{})
	n.SetTracer(rec)
	require.NoError(t, s.Launch(sleeper("ok", "", 1, 0)))
	require.NoError(t, s.Launch(device.Kernel{Name: "bad", Grid: 2, Block: func(device.Block) error { return errors.New("boom") }}))
	require.NoError(t, s.Launch(sleeper("after", "", 1, 0)))
	require.ErrorContains(t, s.Synchronize(), "boom")
	n.SetTracer(nil)

	p := parse(t, write(t, rec))
	require.Equal(t, map[int]string{1: "device 0"}, p.processes)
	k := p.byThread(t)[thread{1, 1}]
	require.Len(t, k, 3)
	require.Equal(t, []string{"ok", "bad", "after"}, []string{k[0].Name, k[1].Name, k[2].Name})
	require.NotContains(t, k[0].Args, "error")
	require.Empty(t, k[0].Cname)
	require.Contains(t, k[1].Args["error"], "boom")
	require.NotContains(t, k[1].Args, "skipped")
	require.Equal(t, "terrible", k[1].Cname)
	require.Equal(t, true, k[2].Args["skipped"])
	require.Contains(t, k[2].Args["error"], "skipped after an earlier failure")
	require.Equal(t, "bad", k[2].Cname)
}

func TestRecorderDrops(t *testing.T) {
	n := newNode(t, 1, 1)
	s := newStream(t, n, 0, "compute", 0)
	rec := trace.NewRecorder(trace.Config{MaxEvents: 10})
	n.SetTracer(rec)
	for i := range 25 {
		require.NoError(t, s.Launch(sleeper(fmt.Sprintf("k%02d", i), "", 1, 0)))
	}
	require.NoError(t, s.Synchronize())
	n.SetTracer(nil)
	require.Equal(t, 10, rec.Len())
	require.Equal(t, int64(15), rec.Dropped())

	p := parse(t, write(t, rec))
	require.Len(t, p.kernels, 10)
	for i, k := range p.kernels {
		require.Equal(t, fmt.Sprintf("k%02d", i), k.Name, "the first MaxEvents kernels are kept")
	}
	require.Equal(t, "15", p.OtherData["dropped_events"])
	require.Equal(t, "10", p.OtherData["events"])
}

// TestRecorderConcurrent runs many kernels on many streams of two devices at once, from as
// many host goroutines, while another goroutine writes the trace: run it with -race.
func TestRecorderConcurrent(t *testing.T) {
	const devices, streams, kernels = 2, 4, 150
	n := newNode(t, devices, 4)
	rec := trace.NewRecorder(trace.Config{})
	n.SetTracer(rec)
	var all []*device.Stream
	for d := range devices {
		for i := range streams {
			all = append(all, newStream(t, n, d, fmt.Sprintf("s%d", i), 1+i%4))
		}
	}
	stopWriting := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		for {
			select {
			case <-stopWriting:
				return
			default:
			}
			var buf bytes.Buffer
			if err := rec.WriteChrome(&buf); err != nil || !json.Valid(buf.Bytes()) {
				t.Errorf("WriteChrome while recording: err %v, valid JSON %v", err, json.Valid(buf.Bytes()))
				return
			}
		}
	})
	var hosts sync.WaitGroup
	for si, s := range all {
		hosts.Go(func() {
			for k := range kernels {
				name := "gemm"
				if k%3 == 0 {
					name = "allreduce+rmsnorm.twoshot"
				}
				if err := s.Launch(device.Kernel{Name: name, Grid: 1 + (si+k)%5, Block: func(device.Block) error { return nil }}); err != nil {
					t.Errorf("%v: %v", s, err)
					return
				}
			}
			if err := s.Synchronize(); err != nil {
				t.Errorf("%v: %v", s, err)
			}
		})
	}
	hosts.Wait()
	close(stopWriting)
	writer.Wait()
	n.SetTracer(nil)
	require.Equal(t, devices*streams*kernels, rec.Len())
	require.Zero(t, rec.Dropped())

	p := parse(t, write(t, rec))
	require.Len(t, p.processes, devices)
	require.Len(t, p.threads, devices*streams)
	threads := p.byThread(t)
	require.Len(t, threads, devices*streams)
	comm := 0
	for th, ks := range threads {
		require.Len(t, ks, kernels, "every kernel of %s", p.threads[th])
		for _, k := range ks {
			if k.Cat == "comm" {
				comm++
			}
		}
	}
	require.Equal(t, devices*streams*((kernels+2)/3), comm)
}

func TestWriteChromeEmpty(t *testing.T) {
	p := parse(t, write(t, trace.NewRecorder(trace.Config{})))
	require.Empty(t, p.TraceEvents)
	require.Equal(t, "0", p.OtherData["events"])
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteChromeWriterError(t *testing.T) {
	n := newNode(t, 1, 1)
	s := newStream(t, n, 0, "compute", 0)
	rec := trace.NewRecorder(trace.Config{})
	n.SetTracer(rec)
	require.NoError(t, s.Launch(sleeper("k", "", 1, 0)))
	require.NoError(t, s.Synchronize())
	n.SetTracer(nil)
	require.ErrorContains(t, rec.WriteChrome(failingWriter{}), "disk full")
}

func TestCategory(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"allreduce.oneshot", "comm"},
		{"allreduce+rmsnorm.twoshot", "comm"},
		{"allgather.oneshot", "comm"},
		{"reducescatter.ring", "comm"},
		{"residual_rmsnorm", "compute"},
		{"gemm", "compute"},
		{"host", "compute"},
		{"", "compute"},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, trace.Category(tc.name)) })
	}
}
