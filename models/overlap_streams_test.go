package models

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/tp"
)

// overlapProbe is a device.Tracer that checks two-batch overlap on device 0 by its
// mechanism, not by its (equal) results. It counts the collective kernels that ran on the
// compute stream and on any other stream (the comm stream, or its lane in a replayed
// graph), and it holds two kernels open until each has seen the other: the compute stream's
// second o_proj (micro-batch B's attention in layer 0) and the first collective of another
// stream (micro-batch A's all-reduce). Both streams are then inside their kernels at once,
// which proves the intervals intersect without relying on timing; the event structure lets
// B's attention run before A's all-reduce ends, so the rendezvous cannot deadlock. When a
// layer's all-reduce ran on the compute stream before that o_proj (the serial schedule),
// nothing could release a hold, so the probe holds nothing and records that. A schedule
// that puts the all-reduces on the comm stream but makes the compute stream wait for them
// would never release the holds: holdLimit ends them, and the rendezvous counts as not met.
type overlapProbe struct {
	compute *device.Stream // device 0's compute stream

	mu                     sync.Mutex
	onCompute, onOther     int // collective kernels of device 0
	oProjs                 int // o_proj kernels of device 0's compute stream
	computeIn, allReduceIn chan struct{}
	joined                 int // holds that saw the other kernel open: 2 when both were open at once
}

// holdLimit bounds a hold of overlapProbe. It only ends a schedule that cannot overlap; a
// schedule that overlaps releases both holds as soon as both kernels are open.
const holdLimit = 30 * time.Second

func newOverlapProbe(compute *device.Stream) *overlapProbe {
	return &overlapProbe{compute: compute, computeIn: make(chan struct{}), allReduceIn: make(chan struct{})}
}

// KernelDone counts device 0's kernels and runs the rendezvous (device.Tracer); a held
// kernel's stream waits for it to return.
func (p *overlapProbe) KernelDone(sp device.KernelSpan) {
	if sp.Stream.Device() != p.compute.Device() {
		return
	}
	collective := sp.Kernel.Work.Class == device.ClassCollective
	p.mu.Lock()
	var hold, wait chan struct{}
	switch {
	case sp.Stream == p.compute && collective:
		p.onCompute++
	case collective:
		if p.onOther++; p.onOther == 1 {
			hold, wait = p.allReduceIn, p.computeIn
		}
	case sp.Stream == p.compute && sp.Kernel.Name == "o_proj":
		// Only the embedding's all-reduce may precede micro-batch B's attention on the
		// compute stream.
		if p.oProjs++; p.oProjs == 2 && p.onCompute == 1 {
			hold, wait = p.computeIn, p.allReduceIn
		}
	}
	p.mu.Unlock()
	if hold == nil {
		return
	}
	close(hold)
	select {
	case <-wait:
		p.mu.Lock()
		p.joined++
		p.mu.Unlock()
	case <-time.After(holdLimit):
	}
}

// TestOverlapRunsAllReducesBesideCompute: with Overlap, a step of four tokens runs every
// layer's all-reduces on the comm stream, one per micro-batch, while the compute stream
// runs the other micro-batch: micro-batch A's all-reduce and micro-batch B's o_proj are
// held open until both are running, eagerly and in a replayed decode graph. Only the
// embedding's all-reduce and the sampling all-gather stay on the compute stream.
func TestOverlapRunsAllReducesBesideCompute(t *testing.T) {
	cfg, err := Preset("tiny")
	require.NoError(t, err)
	src, err := NewDummy(cfg, 11)
	require.NoError(t, err)
	perSeq := (cfg.ContextLength + 15) / 16
	g, err := tp.NewGroup(tp.GroupConfig{World: 2, SMs: 3, CommSMs: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	m, err := NewLlama(g, cfg, src, LlamaOptions{MaxTokens: 8, MaxSeqs: 4, KVBlocks: 4 * perSeq, Overlap: true})
	require.NoError(t, err)
	t.Cleanup(m.Close)

	const batch = 4
	graph, err := m.CaptureDecode(batch, 1)
	require.NoError(t, err)
	st := graph.Step
	for s := range batch {
		st.IDs[s], st.Batch.Pos[s] = int32(20+s), int32(s)
		for i := range st.Batch.Tables[s] {
			st.Batch.Tables[s][i] = int32(s*perSeq + i)
		}
	}
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"eager", func() error { return m.Forward(st) }},
		{"graph", graph.Replay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probe := newOverlapProbe(g.Stream(0))
			g.Node().SetTracer(probe)
			err := tc.run()
			g.Node().SetTracer(nil)
			require.NoError(t, err)
			require.Equal(t, 2, probe.joined, "micro-batch B's o_proj on the compute stream and micro-batch A's all-reduce on the comm stream were never open at once (%d collective kernels on the compute stream, %d on others)", probe.onCompute, probe.onOther)
			// The messages are small: one kernel per call.
			require.Equal(t, 2*2*cfg.Layers, probe.onOther, "every layer's two all-reduces, per micro-batch, off the compute stream")
			require.Equal(t, 2, probe.onCompute, "the embedding's all-reduce and the sampling all-gather on the compute stream")
		})
	}
}
