package engine

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// Bounds on a request's stop strings, far above what clients send (OpenAI takes at most
// 4, vLLM's users a handful) and low enough that one request's automaton stays small (at
// most 64 KiB of trie, about 1 MiB): more is an error naming the field.
const (
	MaxStopStrings     = 256 // strings in Request.Stop
	MaxStopStringBytes = 256 // bytes of each, in UTF-8
)

// stopStrings is an Aho-Corasick automaton over a request's stop strings: a trie of the
// strings whose node v stands for a prefix of one of them, with failure links. Fed a
// text one byte at a time, its node is the longest suffix of the text that is a prefix of
// a stop string, so it finds the first stop string the text completes in time linear in
// the text (at most two steps a byte: a byte deepens the node by one at most and every
// failure link makes it shallower), whatever the strings' number and length, and the
// node's depth is the tail an output must hold back. It is the plain reference below,
// over the whole text so far, made incremental: the output ends at the stop string
// completed first, byte by byte, and of those completed at the same byte the longest, so
// where tokens cut the text does not change it.
//
//	end, n := -1, 0 // the end of the first stop string in text, and its length
//	for _, stop := range stops {
//		if i := strings.Index(text, stop); i >= 0 {
//			if e := i + len(stop); end < 0 || e < end || e == end && len(stop) > n {
//				end, n = e, len(stop)
//			}
//		}
//	}
//
// It is immutable once built, so the choices of one request share it; each output keeps
// its own node. It is written here rather than taken from a Go Aho-Corasick library
// because those match whole texts: none is fed a stream a byte at a time and says how
// deep its state is, which is what an output must hold back.
type stopStrings struct {
	// Nodes are numbered breadth first, 0 the root (the empty prefix). Node v's children
	// are edgeTo[edgeStart[v]:edgeStart[v+1]], reached by the bytes at the same indexes of
	// edgeByte, in increasing order.
	edgeStart []int32
	edgeByte  []byte
	edgeTo    []int32
	fail      []int32  // the node of v's longest proper suffix that is in the trie
	depth     []uint16 // the length of v's prefix
	match     []uint16 // the length of the longest stop string that ends v's prefix, 0 if none
}

// newStopStrings checks a request's stop strings and builds their automaton. Valid
// UTF-8 (text is) keeps the tail an output holds back whole characters.
func newStopStrings(stops []string) (*stopStrings, error) {
	if len(stops) > MaxStopStrings {
		return nil, fmt.Errorf("engine: stop holds %d strings; at most %d are allowed", len(stops), MaxStopStrings)
	}
	for i, s := range stops {
		switch {
		case len(s) > MaxStopStringBytes:
			return nil, fmt.Errorf("engine: stop string %d is %d bytes long; at most %d bytes are allowed", i, len(s), MaxStopStringBytes)
		case !utf8.ValidString(s):
			return nil, fmt.Errorf("engine: stop string %d is not valid UTF-8", i)
		}
	}
	return compileStopStrings(stops), nil
}

// compileStopStrings builds the automaton of stops, nil when there are none but empty
// ones (which never end an output).
func compileStopStrings(stops []string) *stopStrings {
	var keep []string
	for _, s := range stops {
		if s != "" {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	slices.Sort(keep)
	return buildStopStrings(slices.Compact(keep))
}

// buildStopStrings builds the automaton of sorted, distinct, non-empty strings. A node's
// strings (those its prefix begins) are a run of sorted, and its children split the run
// by the byte after the prefix, in byte order: so the trie is built breadth first, each
// node's children numbered together.
func buildStopStrings(sorted []string) *stopStrings {
	a := &stopStrings{fail: []int32{0}, depth: []uint16{0}, match: []uint16{0}}
	runs := [][2]int{{0, len(sorted)}} // node v's run of sorted
	for v := 0; v < len(runs); v++ {
		lo, hi, d := runs[v][0], runs[v][1], int(a.depth[v])
		a.edgeStart = append(a.edgeStart, int32(len(a.edgeByte)))
		if len(sorted[lo]) == d { // v's prefix is a stop string, which sorts first of the run
			lo++
		}
		for i := lo; i < hi; {
			c, j := sorted[i][d], i+1
			for j < hi && sorted[j][d] == c {
				j++
			}
			// u's failure link and its match are nodes of smaller depth, numbered and
			// finished before u.
			u, fail := int32(len(runs)), int32(0)
			if v != 0 { // a child of the root fails to the root
				fail = a.next(a.fail[v], c, nil)
			}
			match := a.match[fail]
			if len(sorted[i]) == d+1 {
				match = uint16(d + 1)
			}
			runs = append(runs, [2]int{i, j})
			a.edgeByte, a.edgeTo = append(a.edgeByte, c), append(a.edgeTo, u)
			a.depth, a.fail, a.match = append(a.depth, uint16(d+1)), append(a.fail, fail), append(a.match, match)
			i = j
		}
	}
	a.edgeStart = append(a.edgeStart, int32(len(a.edgeByte)))
	return a
}

// next is the node after v reads c: v's child by c, or else that of v's failure link, and
// so on to the root. steps, when not nil, counts the nodes it tried.
func (a *stopStrings) next(v int32, c byte, steps *int64) int32 {
	for {
		if steps != nil {
			*steps++
		}
		edges := a.edgeByte[a.edgeStart[v]:a.edgeStart[v+1]]
		if i, ok := slices.BinarySearch(edges, c); ok {
			return a.edgeTo[int(a.edgeStart[v])+i]
		}
		if v == 0 {
			return 0
		}
		v = a.fail[v]
	}
}
