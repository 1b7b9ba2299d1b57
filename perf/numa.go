package perf

import (
	"fmt"
	"time"

	"github.com/tpslice/tpslice/hw"
)

// NUMAPlacement is where a TP group's ranks run and where their weights lie on a
// two-socket server.
type NUMAPlacement int

// The placements PriceNUMA compares.
const (
	// PerNode spreads the ranks over the sockets in contiguous blocks and keeps each rank's
	// weights in its own socket's memory: what --cpu-affinity auto does (topo.Place, the
	// weights first touched by a thread of the rank's node).
	PerNode NUMAPlacement = iota
	// Interleaved spreads the ranks likewise, every rank's weights interleaved page by page
	// over both sockets (numactl --interleave=all).
	Interleaved
	// MemoryOnOneNode spreads the ranks, but every weight lies in socket 0's memory: one
	// loader thread first touched them all, what an unplaced process gets.
	MemoryOnOneNode
	// OneSocket runs every rank and keeps every weight on socket 0 (numactl
	// --cpunodebind=0 --membind=0): half the machine.
	OneSocket
)

// NUMAPlacements lists the placements in the order reports print them.
var NUMAPlacements = []NUMAPlacement{PerNode, Interleaved, MemoryOnOneNode, OneSocket}

// String describes the placement in a few words.
func (p NUMAPlacement) String() string {
	switch p {
	case PerNode:
		return "a rank's weights on its node"
	case Interleaved:
		return "weights interleaved over both nodes"
	case MemoryOnOneNode:
		return "all weights on node 0, ranks on both"
	case OneSocket:
		return "ranks and weights on node 0 only"
	}
	return fmt.Sprintf("placement(%d)", int(p))
}

// NUMAStep is a decode step's weight reads priced under one placement.
type NUMAStep struct {
	Placement NUMAPlacement
	// Time is the step's weight reads at the busiest resource's bandwidth.
	Time time.Duration
	// Bound names that resource ("socket 0's memory", "the link from socket 0 to 1").
	Bound string
}

// PriceNUMA prices one decode step of ranks ranks, each reading rankBytes of weights, on
// server s under placement p. Decode reads every weight once a step and little else, so
// the step is bound by memory bandwidth: each socket's memory serves the bytes that lie in
// it, whichever socket reads them, and the link from socket a to b carries the bytes in a's
// memory that ranks on b read. The step takes as long as its busiest resource, bytes over
// bandwidth, with perfect overlap otherwise: a roofline, not a simulation. Rank r runs on
// socket ⌊2r/ranks⌋ (socket 0 for OneSocket). Compute, caches and the all-reduce between
// the ranks are not priced.
func PriceNUMA(s hw.TwoSocket, ranks int, rankBytes int64, p NUMAPlacement) (NUMAStep, error) {
	if ranks < 1 || rankBytes < 1 || s.MemBytesPerSec <= 0 || s.LinkBytesPerSec <= 0 {
		return NUMAStep{}, fmt.Errorf("perf: NUMA price of %d ranks × %d bytes on %q: want ranks, bytes and bandwidths > 0", ranks, rankBytes, s.Name)
	}
	if p < PerNode || p > OneSocket {
		return NUMAStep{}, fmt.Errorf("perf: unknown NUMA placement %d", int(p))
	}
	var mem [2]float64     // bytes served by each socket's memory
	var link [2][2]float64 // link[a][b]: bytes from a's memory read on b
	for r := range ranks {
		socket := 2 * r / ranks
		if p == OneSocket {
			socket = 0
		}
		var share [2]float64 // the fraction of the rank's bytes in each socket's memory
		switch p {
		case PerNode:
			share[socket] = 1
		case Interleaved:
			share = [2]float64{0.5, 0.5}
		case MemoryOnOneNode, OneSocket:
			share[0] = 1
		}
		for node, f := range share {
			b := f * float64(rankBytes)
			mem[node] += b
			if node != socket {
				link[node][socket] += b
			}
		}
	}
	step := NUMAStep{Placement: p}
	worst := 0.0
	consider := func(seconds float64, what string) {
		if seconds > worst {
			worst, step.Bound = seconds, what
		}
	}
	for a := range 2 {
		consider(mem[a]/s.MemBytesPerSec, fmt.Sprintf("socket %d's memory", a))
		consider(link[a][1-a]/s.LinkBytesPerSec, fmt.Sprintf("the link from socket %d to %d", a, 1-a))
	}
	step.Time = time.Duration(worst * 1e9)
	return step, nil
}
