package device_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// spans is a device.Tracer that keeps what it is told.
type spans struct {
	mu   sync.Mutex
	list []device.KernelSpan
}

func (s *spans) KernelDone(span device.KernelSpan) {
	s.mu.Lock()
	s.list = append(s.list, span)
	s.mu.Unlock()
}

func (s *spans) get() []device.KernelSpan {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]device.KernelSpan(nil), s.list...)
}

func TestTracerSeesRunFailedAndSkippedKernels(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 2})
	s := newStream(t, dev(t, n, 1), "comm", 1)
	require.Nil(t, n.Tracer(), "tracing is off by default")
	tr := &spans{}
	n.SetTracer(tr)
	require.Same(t, tr, n.Tracer())

	boom := errors.New("boom")
	noop := func(device.Block) error { return nil }
	var seenByEpilogue []int
	epilogue := func(err error) { seenByEpilogue = append(seenByEpilogue, len(tr.get())) }
	require.NoError(t, s.Launch(device.Kernel{Name: "ok", Detail: "count=4096 f32", Grid: 3, Block: noop, Epilogue: epilogue}))
	require.NoError(t, s.Launch(device.Kernel{Name: "fails", Grid: 2, Block: func(device.Block) error { return boom }, Epilogue: epilogue}))
	require.NoError(t, s.Launch(device.Kernel{Name: "skipped", Grid: 1, Block: noop, Epilogue: epilogue}))
	require.NoError(t, s.LaunchSequence([]device.Kernel{
		{Name: "replayed.a", Grid: 1, Block: noop},
		{Name: "replayed.b", Grid: 4, Block: noop, Detail: "graph"},
	}))
	require.ErrorIs(t, s.Synchronize(), boom)

	got := tr.get()
	require.Len(t, got, 5)
	require.Equal(t, []int{1, 2, 3}, seenByEpilogue, "a kernel is reported before its epilogue runs")
	want := []struct {
		name, detail string
		grid         int
		failed       bool
		skipped      bool
	}{
		{"ok", "count=4096 f32", 3, false, false},
		{"fails", "", 2, true, false},
		{"skipped", "", 1, true, true},
		{"replayed.a", "", 1, true, true},
		{"replayed.b", "graph", 4, true, true},
	}
	for i, w := range want {
		sp := got[i]
		require.Same(t, s, sp.Stream, w.name)
		require.Equal(t, 1, sp.Stream.Device().ID())
		require.Equal(t, w.name, sp.Kernel.Name)
		require.Equal(t, w.detail, sp.Kernel.Detail)
		require.Equal(t, w.grid, sp.Kernel.Grid)
		require.Equal(t, w.skipped, sp.Skipped, w.name)
		require.False(t, sp.End.Before(sp.Start), w.name)
		if i > 0 {
			require.False(t, sp.Start.Before(got[i-1].End), "%s starts after its predecessor ends", w.name)
		}
		if !w.failed {
			require.NoError(t, sp.Err, w.name)
			continue
		}
		require.ErrorIs(t, sp.Err, boom, w.name)
		if w.skipped {
			require.ErrorContains(t, sp.Err, "kernel "+w.name+" skipped after an earlier failure")
		}
	}

	n.SetTracer(nil)
	require.Nil(t, n.Tracer())
	s2 := newStream(t, dev(t, n, 0), "compute", 0)
	require.NoError(t, s2.Launch(device.Kernel{Name: "untraced", Grid: 1, Block: noop}))
	require.NoError(t, s2.Synchronize())
	require.Len(t, tr.get(), 5, "no reports once the tracer is removed")
}

// BenchmarkTracer measures what tracing costs a one-block kernel: off (one atomic load) and
// on with a tracer that does nothing.
//
//	go test ./device -run '^$' -bench Tracer
func BenchmarkTracer(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			n, err := device.NewNode(device.NodeConfig{Devices: 1, SMs: 1})
			require.NoError(b, err)
			defer n.Close()
			if on {
				n.SetTracer(nopTracer{})
			}
			d, _ := n.Device(0)
			s, err := d.NewStream("s", 0)
			require.NoError(b, err)
			k := device.Kernel{Name: "k", Grid: 1, Block: func(device.Block) error { return nil }}
			for b.Loop() {
				if err := s.Launch(k); err != nil {
					b.Fatal(err)
				}
			}
			require.NoError(b, s.Synchronize())
		})
	}
}

type nopTracer struct{}

func (nopTracer) KernelDone(device.KernelSpan) {}
