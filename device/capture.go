package device

import (
	"errors"
	"fmt"
	"slices"
)

// ErrCapture is returned (wrapped) for an operation that is illegal while a stream is
// being captured into a graph, and by EndCapture for a capture such an operation spoiled.
var ErrCapture = errors.New("illegal during stream capture")

// GraphNode is one operation of a captured graph: a kernel (host functions are captured as
// one-block kernels), the stream it was captured on, and the nodes it depends on.
type GraphNode struct {
	Kernel Kernel
	Stream *Stream
	Deps   []int
}

// Graph is the work captured from one or more streams, nodes in capture order (which is a
// topological order: a node's dependencies come before it). The buffers its kernels use
// are fixed: replaying it runs the same kernels on the same memory.
type Graph struct {
	Origin *Stream
	Nodes  []GraphNode
}

// capture is a graph being recorded; node.capMu guards it and every stream's capture state.
type capture struct {
	origin *Stream
	nodes  []GraphNode
	joined []*Stream // streams that joined by waiting on an event recorded under capture
	err    error     // the first illegal operation
}

// BeginCapture puts s in capture mode (cudaStreamBeginCapture): launches, host functions,
// event records and waits on s are recorded as graph nodes instead of running. Other
// streams join the capture by waiting on an event recorded on a capturing stream; they
// must be joined back into s (an event recorded on them that s waits on) before
// EndCapture. Synchronizing a capturing stream and allocating on its device are errors.
func (s *Stream) BeginCapture() error {
	n := s.dev.node
	n.capMu.Lock()
	defer n.capMu.Unlock()
	if s.cap != nil {
		return fmt.Errorf("%v: begin capture: %w: the stream is already capturing", s, ErrCapture)
	}
	s.cap, s.frontier = &capture{origin: s}, nil
	s.capturing.Store(true)
	s.dev.capturing.Add(1)
	return nil
}

// EndCapture ends the capture begun on s and returns the graph. It fails when an illegal
// operation spoiled the capture, or when a stream that joined it was not joined back.
func (s *Stream) EndCapture() (*Graph, error) {
	n := s.dev.node
	n.capMu.Lock()
	defer n.capMu.Unlock()
	c := s.cap
	if c == nil || c.origin != s {
		return nil, fmt.Errorf("%v: end capture: %w: the stream is not the origin of a capture", s, ErrCapture)
	}
	err := c.err
	if err == nil {
		ancestors := c.ancestors(s.frontier)
		for _, j := range c.joined {
			for _, last := range j.frontier {
				if !ancestors[last] {
					err = fmt.Errorf("%v: end capture: %w: %v joined the capture and was not joined back "+
						"(record an event on it and wait for that event on the origin stream)", s, ErrCapture, j)
				}
			}
		}
	}
	for _, st := range append([]*Stream{s}, c.joined...) {
		st.cap, st.frontier = nil, nil
		st.capturing.Store(false)
		st.dev.capturing.Add(-1)
	}
	if err != nil {
		return nil, err
	}
	return &Graph{Origin: s, Nodes: c.nodes}, nil
}

// Capturing reports whether s is being captured.
func (s *Stream) Capturing() bool { return s.capturing.Load() }

// ancestors returns every node from which one of the given nodes can be reached,
// including them.
func (c *capture) ancestors(from []int) map[int]bool {
	seen := map[int]bool{}
	stack := slices.Clone(from)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[i] {
			continue
		}
		seen[i] = true
		stack = append(stack, c.nodes[i].Deps...)
	}
	return seen
}

// spoil records an illegal operation: it fails now, and EndCapture fails with it.
func (c *capture) spoil(err error) error {
	if c.err == nil {
		c.err = err
	}
	return err
}

// captureKernel records k as a node of s's capture, after the stream's last nodes.
// It reports false when s is not capturing (the caller runs k instead).
func (s *Stream) captureKernel(k Kernel) (bool, error) {
	if !s.capturing.Load() {
		return false, nil
	}
	n := s.dev.node
	n.capMu.Lock()
	defer n.capMu.Unlock()
	c := s.cap
	if c == nil {
		return false, nil
	}
	c.nodes = append(c.nodes, GraphNode{Kernel: k, Stream: s, Deps: s.frontier})
	s.frontier = []int{len(c.nodes) - 1}
	return true, nil
}

// captureRecord makes e stand for s's current last nodes, if s is capturing.
func (s *Stream) captureRecord(e *Event) bool {
	if !s.capturing.Load() {
		return false
	}
	n := s.dev.node
	n.capMu.Lock()
	defer n.capMu.Unlock()
	if s.cap == nil {
		return false
	}
	e.captured, e.capturedAfter = s.cap, slices.Clone(s.frontier)
	return true
}

// captureWait makes s's next node depend on what e stands for; a stream that is not
// capturing joins e's capture. It reports false when neither s nor e is under capture.
func (s *Stream) captureWait(e *Event) (bool, error) {
	n := s.dev.node
	n.capMu.Lock()
	defer n.capMu.Unlock()
	c := e.captured
	if c != nil && c.origin.cap != c {
		c = nil // recorded under a capture that has ended
	}
	switch {
	case c == nil && s.cap == nil:
		return false, nil
	case c == nil:
		return true, s.cap.spoil(fmt.Errorf("%v: wait on an event: %w: the event was not recorded under this capture", s, ErrCapture))
	case s.cap == nil:
		if s.dev.node != c.origin.dev.node {
			return true, c.spoil(fmt.Errorf("%v: joining a capture of another node: %w", s, ErrCapture))
		}
		s.cap, s.frontier = c, slices.Clone(e.capturedAfter)
		c.joined = append(c.joined, s)
		s.capturing.Store(true)
		s.dev.capturing.Add(1)
	case s.cap != c:
		return true, s.cap.spoil(fmt.Errorf("%v: wait on an event of another capture: %w", s, ErrCapture))
	default:
		for _, d := range e.capturedAfter {
			if !slices.Contains(s.frontier, d) {
				s.frontier = append(s.frontier, d)
			}
		}
	}
	return true, nil
}

// captureIllegal fails op when s is capturing, spoiling the capture.
func (s *Stream) captureIllegal(op string) error {
	if !s.capturing.Load() {
		return nil
	}
	n := s.dev.node
	n.capMu.Lock()
	defer n.capMu.Unlock()
	if s.cap == nil {
		return nil
	}
	return s.cap.spoil(fmt.Errorf("%v: %s: %w", s, op, ErrCapture))
}
