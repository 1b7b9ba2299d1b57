package cudagraph

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
)

// Capture records what fn enqueues on s — and on streams that fork from s through events
// and join back — into a graph. Nothing runs while capturing.
func Capture(s *device.Stream, fn func() error) (*device.Graph, error) {
	if err := s.BeginCapture(); err != nil {
		return nil, err
	}
	ferr := fn()
	g, err := s.EndCapture()
	if ferr != nil {
		return nil, fmt.Errorf("cudagraph: capture on %v: %w", s, ferr)
	}
	return g, err
}

// Exec is an instantiated graph: per captured stream (lane) its nodes cut into segments
// at the points where another lane waits for it or it waits for another lane, and the
// events that carry those dependencies.
type Exec struct {
	origin   *device.Stream
	lanes    []*lane
	segments []*segment    // in the order of their first node: producers before consumers
	start    *device.Event // recorded on the launch stream: lanes start after prior work
	nodes    int
}

type lane struct {
	captured *device.Stream // the stream the nodes were captured on
	replay   *device.Stream // the stream they replay on (the launch stream for the origin)
	last     *segment
	done     *device.Event // recorded after the lane's last segment; the launch stream waits
}

type segment struct {
	lane    *lane
	first   bool            // the lane's first segment
	waits   []*device.Event // recorded by other lanes, waited for before the segment
	kernels []device.Kernel
	records []*device.Event // recorded after the segment, for other lanes
}

// Instantiate prepares g for replay. The origin lane replays on the stream given to
// Launch; every other lane gets a stream of its own on its device, with the SM budget of
// the stream it was captured on.
func Instantiate(g *device.Graph) (*Exec, error) {
	x := &Exec{origin: g.Origin, start: device.NewEvent(), nodes: len(g.Nodes)}
	laneOf := map[*device.Stream]*lane{}
	nodeLane := make([]*lane, len(g.Nodes))
	for i, n := range g.Nodes {
		l, ok := laneOf[n.Stream]
		if !ok {
			l = &lane{captured: n.Stream}
			if n.Stream != g.Origin {
				s, err := n.Stream.Device().NewStream(n.Stream.Name()+" (graph lane)", n.Stream.SMBudget())
				if err != nil {
					return nil, fmt.Errorf("cudagraph: instantiate: %w", err)
				}
				l.replay, l.done = s, device.NewEvent()
			}
			laneOf[n.Stream] = l
			x.lanes = append(x.lanes, l)
		}
		nodeLane[i] = l
	}
	// Cross-lane edges become events: the producer's segment ends after it (and records
	// the event), the consumer's segment begins before it (and waits).
	edgeEvent := map[int]*device.Event{} // producer node → its event
	waitsBefore := make([][]*device.Event, len(g.Nodes))
	recordAfter := make([]*device.Event, len(g.Nodes))
	for i, n := range g.Nodes {
		for _, d := range n.Deps {
			if nodeLane[d] == nodeLane[i] {
				continue // same lane: stream order already holds
			}
			e, ok := edgeEvent[d]
			if !ok {
				e = device.NewEvent()
				edgeEvent[d], recordAfter[d] = e, e
			}
			waitsBefore[i] = append(waitsBefore[i], e)
		}
	}
	for i, n := range g.Nodes {
		l := nodeLane[i]
		if l.last == nil || len(waitsBefore[i]) > 0 || len(l.last.records) > 0 {
			seg := &segment{lane: l, first: l.last == nil, waits: waitsBefore[i]}
			x.segments = append(x.segments, seg)
			l.last = seg
		}
		l.last.kernels = append(l.last.kernels, n.Kernel)
		if recordAfter[i] != nil {
			l.last.records = append(l.last.records, recordAfter[i])
		}
	}
	return x, nil
}

// Nodes returns the number of nodes the graph replays.
func (x *Exec) Nodes() int { return x.nodes }

// Launch replays the graph after the work already enqueued on s, which must be on the
// device the graph was captured on. Errors of the replayed kernels surface from the
// streams' Synchronize, as for any kernel.
func (x *Exec) Launch(s *device.Stream) error {
	if s.Device() != x.origin.Device() {
		return fmt.Errorf("cudagraph: launch on %v: the graph was captured on %v", s, x.origin.Device())
	}
	if len(x.lanes) > 1 {
		if err := s.Record(x.start); err != nil {
			return err
		}
	}
	// Segments go out in node order, so every event a segment waits for has already been
	// recorded (for this replay) on its producer's stream.
	for _, seg := range x.segments {
		rs := seg.lane.replay
		if rs == nil {
			rs = s
		} else if seg.first {
			if err := rs.WaitEvent(x.start); err != nil {
				return err
			}
		}
		for _, e := range seg.waits {
			if err := rs.WaitEvent(e); err != nil {
				return err
			}
		}
		if err := rs.LaunchSequence(seg.kernels); err != nil {
			return err
		}
		for _, e := range seg.records {
			if err := rs.Record(e); err != nil {
				return err
			}
		}
	}
	// Work enqueued on s after the replay waits for every lane, even one whose last nodes
	// the origin lane does not otherwise depend on.
	for _, l := range x.lanes {
		if l.done == nil {
			continue
		}
		if err := l.replay.Record(l.done); err != nil {
			return err
		}
		if err := s.WaitEvent(l.done); err != nil {
			return err
		}
	}
	return nil
}
