package comm

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
)

// graphInput is the input buffer of a collective captured into a graph. Once registered,
// every rank maps every peer's input, and the replayed kernels read the peers' inputs in
// place instead of copying their own into the staging buffer first (vLLM's
// register_graph_buffers): a graph's buffers are fixed, so the mapping stays valid.
type graphInput struct {
	in    *device.Buffer
	views []*device.Buffer // index p: rank p's input as this rank maps it; nil until registered
}

// registered reports whether the call reads the peers' inputs in place.
func (cl *call) registered() bool { return cl.reg != nil && cl.reg.views != nil }

// captureInput notes the input of a call being captured, when the algorithm can read its
// peers' inputs in place (its row's graphInPlace: one-shot and two-shot) and the output is
// other memory (peers still read the input while this rank writes its output), on the
// exact wire (a low-precision one encodes into staging).
func (r *Rank) captureInput(s *device.Stream, cl *call) {
	if !s.Capturing() || !cl.desc.algo.readsGraphInputs() || device.Overlaps(cl.in, cl.out) || cl.wire != WireExact {
		return
	}
	cl.reg = &graphInput{in: cl.in}
	r.graphInputs = append(r.graphInputs, cl.reg)
}

// RegisterGraphBuffers maps, on every rank, every peer's input buffer of the collectives
// captured since the last registration, so that replays reduce in place. Call it once
// every rank has finished capturing the same graph (each rank must have captured the same
// collectives). It returns how many collectives per rank now read in place. Across
// processes (Join) every process calls it: the inputs' handles go through the bootstrap's
// all-gather, as vLLM's register_graph_buffers all-gathers them, so each captured input
// must be a whole buffer allocated with Config.Memory.
func (c *Communicator) RegisterGraphBuffers() (int, error) {
	if c.boot != nil {
		return c.registerAcross()
	}
	n := len(c.ranks[0].graphInputs)
	for r, rk := range c.ranks {
		if len(rk.graphInputs) != n {
			return 0, fmt.Errorf("comm: register graph buffers: rank %d captured %d collectives, rank 0 captured %d", r, len(rk.graphInputs), n)
		}
	}
	handles := map[*device.Buffer]device.IPCHandle{}
	for i := range n {
		for r, rk := range c.ranks {
			in := rk.graphInputs[i].in
			base, off := in.Allocation()
			h, ok := handles[base]
			if !ok {
				var err error
				if h, err = base.Export(); err != nil {
					return 0, fmt.Errorf("comm: register graph buffers: rank %d: %w", r, err)
				}
				handles[base] = h
			}
			for q, peer := range c.ranks {
				reg := peer.graphInputs[i]
				if reg.views == nil {
					reg.views = make([]*device.Buffer, c.n)
				}
				if q == r {
					reg.views[r] = in
					continue
				}
				mapped, err := peer.dev.OpenPeer(h)
				if err == nil {
					reg.views[r], err = mapped.View(off, in.Len())
				}
				if err != nil {
					return 0, fmt.Errorf("comm: register graph buffers: rank %d mapping rank %d's input: %w", q, r, err)
				}
			}
		}
	}
	for _, rk := range c.ranks {
		rk.graphInputs = nil
	}
	return n, nil
}

// registerAcross is RegisterGraphBuffers for a rank whose peers live in other processes.
// A rank that cannot export its inputs still takes part in the all-gather (with none), so
// that its peers fail too instead of waiting.
func (c *Communicator) registerAcross() (int, error) {
	rk := c.local[0]
	inputs := rk.graphInputs
	rk.graphInputs = nil
	hs, err := c.exportInputs(rk, inputs)
	if err != nil {
		inputs = nil
	}
	all, gerr := c.boot.AllGather(hs)
	closeHandles(hs)
	defer func() {
		for _, l := range all {
			closeHandles(l)
		}
	}()
	if err != nil {
		return 0, err
	}
	if gerr != nil {
		return 0, fmt.Errorf("comm: register graph buffers: rank %d exchanging handles: %w", rk.rank, gerr)
	}
	for p, l := range all {
		if len(l) != len(inputs) {
			return 0, fmt.Errorf("comm: register graph buffers: rank %d captured %d collectives with inputs it could share, rank %d captured %d", p, len(l), rk.rank, len(inputs))
		}
	}
	for i, gi := range inputs {
		views := make([]*device.Buffer, c.n)
		for p := range c.n {
			if p == rk.rank {
				views[p] = gi.in
				continue
			}
			h := all[p][i]
			if h.DType != gi.in.DType() || h.Count < gi.in.Len() {
				return 0, fmt.Errorf("comm: register graph buffers: rank %d's input of collective %d holds %d %v, rank %d's %d %v", p, i, h.Count, h.DType, rk.rank, gi.in.Len(), gi.in.DType())
			}
			b, err := c.mem.Open(rk.dev, h)
			if err != nil {
				return 0, fmt.Errorf("comm: register graph buffers: rank %d mapping rank %d's input: %w", rk.rank, p, err)
			}
			c.mapped = append(c.mapped, b)
			views[p] = b
		}
		gi.views = views
	}
	return len(inputs), nil
}

// exportInputs exports the captured inputs of rank rk, which must be whole buffers that
// Config.Memory allocated.
func (c *Communicator) exportInputs(rk *Rank, inputs []*graphInput) ([]device.IPCHandle, error) {
	var hs []device.IPCHandle
	for i, gi := range inputs {
		if base, _ := gi.in.Allocation(); base != gi.in {
			closeHandles(hs)
			return nil, fmt.Errorf("comm: register graph buffers: rank %d: the input of captured collective %d (%v) is part of a buffer; across processes a graph's inputs must be whole buffers", rk.rank, i, gi.in)
		}
		h, err := c.mem.Export(gi.in)
		if err != nil {
			closeHandles(hs)
			return nil, fmt.Errorf("comm: register graph buffers: rank %d: the input of captured collective %d cannot be shared (allocate it with Config.Memory): %w", rk.rank, i, err)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// GraphBytesSaved returns the bytes replayed graphs did not copy into staging buffers, over
// all ranks.
func (c *Communicator) GraphBytesSaved() int64 {
	var total int64
	for _, rk := range c.local {
		total += rk.bytesSaved.Load()
	}
	return total
}
