package models

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tpslice/tpslice/cudagraph"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/layers"
)

// DecodeGraph is a decode step for a fixed batch of Batch sequences (one token each),
// captured on every rank. Its inputs are static: fill Step's slices in place (ids,
// positions, block tables; the Sample rows are fixed) and Replay; padding rows point at a
// scratch block. Replay gives bitwise the results of Forward on the same step.
type DecodeGraph struct {
	m     *Llama
	Batch int
	// Step is the static input: IDs, Batch.Pos, Batch.Tables and (with candidates) the
	// Samplers are rewritten before each replay; Batch.Seq, Sample and Candidates are
	// fixed at capture.
	Step  Step
	execs []*cudagraph.Exec
	graph []*device.Graph
	// CaptureTime is how long capturing, instantiating and registering took on all ranks.
	CaptureTime time.Duration
	// InPlace is how many of a rank's collectives read their peers' inputs in place on
	// replay (comm.RegisterGraphBuffers) instead of copying into staging buffers.
	InPlace int
	// replays counts the replays that ran on every rank, so that callers can show the
	// graph is used (a step that silently ran eagerly gives the same numbers).
	replays atomic.Int64
}

// CaptureDecode captures the decode step of a batch of b sequences, proposing k
// candidates per sequence (k = 0: the full logits), on every rank. Tables hold room for
// the whole context.
func (m *Llama) CaptureDecode(b, k int) (*DecodeGraph, error) {
	if b < 1 || b > m.opt.MaxSeqs || b > m.opt.MaxTokens {
		return nil, fmt.Errorf("models: decode graph for a batch of %d: want 1 to %d", b, min(m.opt.MaxSeqs, m.opt.MaxTokens))
	}
	perSeq := (m.cfg.ContextLength + m.opt.BlockSize - 1) / m.opt.BlockSize
	st := Step{IDs: make([]int32, b), Sample: make([]int, b), Candidates: k,
		Batch: layers.Batch{Pos: make([]int32, b), Seq: make([]int32, b), Tables: make([][]int32, b)}}
	if k > 0 { // sampled rows replay too: their samplers are inputs like the ids
		st.Samplers = make([]layers.RowSampler, b)
	}
	for i := range b {
		st.Batch.Seq[i], st.Sample[i] = int32(i), i
		st.Batch.Tables[i] = make([]int32, perSeq)
	}
	if err := m.check(st); err != nil {
		return nil, err
	}
	g := &DecodeGraph{m: m, Batch: b, Step: st, execs: make([]*cudagraph.Exec, m.plan.World), graph: make([]*device.Graph, m.plan.World)}
	start := time.Now()
	err := m.group.Run(func(r int) error {
		s := m.group.Stream(r)
		graph, err := cudagraph.Capture(s, func() error { return m.ranks[r].enqueue(s, st) })
		if err != nil {
			return err
		}
		g.graph[r] = graph
		g.execs[r], err = cudagraph.Instantiate(graph)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("models: capturing the decode step of batch %d: %w", b, err)
	}
	// A rank of a worker process registers nothing: across processes comm maps only whole
	// buffers, and the captured inputs are views of the activations, so its replays copy
	// into the staging buffers as eager calls do (InPlace 0).
	if !m.group.Joined() {
		if g.InPlace, err = m.group.Comm().RegisterGraphBuffers(); err != nil {
			return nil, fmt.Errorf("models: decode graph of batch %d: %w", b, err)
		}
	}
	g.CaptureTime = time.Since(start)
	return g, nil
}

// Replay runs the captured step with the current contents of Step on every rank and waits
// for it; Candidates or Logits then hold its result, as after Forward.
func (g *DecodeGraph) Replay() error {
	if err := g.m.runnable(g.Step); err != nil {
		return err
	}
	err := g.m.group.Run(func(r int) error {
		s := g.m.group.Stream(r)
		if err := g.execs[r].Launch(s); err != nil {
			return err
		}
		return s.Synchronize()
	})
	if err == nil {
		g.replays.Add(1)
	}
	return err
}

// Replays returns how many times Replay ran the graph to the end on every rank.
func (g *DecodeGraph) Replays() int64 { return g.replays.Load() }

// Nodes returns the kernels (and collectives) one rank replays per step.
func (g *DecodeGraph) Nodes() int { return g.execs[g.m.group.Local()[0]].Nodes() }

// Graph returns what rank r captured: the kernels it replays per step, with their Work
// and dependencies (what a performance model prices).
func (g *DecodeGraph) Graph(r int) *device.Graph { return g.graph[r] }
