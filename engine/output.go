package engine

import "strings"

// textStream is the incremental detokenizer an output reads (a *tokenizer.Stream).
type textStream interface {
	Add(id int) string
	Flush() string
}

// output turns generated ids into text, holding back what may still become a stop string.
// It runs on the scheduler's goroutine, a step's every token, so its work is linear in
// the text: each byte takes at most two steps of the stop strings' automaton, and the
// text held back is the automaton node's depth, not a search.
type output struct {
	stream  textStream
	stops   *stopStrings    // nil without stop strings
	node    int32           // stops' node after all: the longest tail that may start one
	include bool            // the output keeps the stop string
	all     strings.Builder // everything decoded so far
	emitted int             // bytes of all already emitted
	stopped int             // length of all at the stop string, -1 if none
	end     int             // length of the output once stopped: at or after the stop string
	// scanned counts the bytes of text matched against the stop strings and steps the
	// automaton's steps over them: the work stop strings cost, which Stats shows at most
	// two steps a byte whatever the strings.
	scanned, steps int64
}

func newOutput(stream textStream, stops *stopStrings, include bool) *output {
	return &output{stream: stream, stops: stops, include: include, stopped: -1}
}

// add decodes id and returns the text now safe to emit, and whether a stop string ended
// the output.
func (o *output) add(id int) (string, bool) {
	text := o.stream.Add(id)
	base := o.all.Len()
	o.all.WriteString(text)
	held := 0
	if o.stops != nil {
		for i := range len(text) {
			o.node = o.stops.next(o.node, text[i], &o.steps)
			if n := int(o.stops.match[o.node]); n > 0 {
				o.scanned += int64(i + 1)
				o.stopped = base + i + 1 - n
				o.end = o.stopped
				if o.include {
					o.end += n
				}
				s := o.all.String()
				out := s[o.emitted:max(o.emitted, o.end)]
				o.emitted = len(s)
				return out, true
			}
		}
		o.scanned += int64(len(text))
		held = int(o.stops.depth[o.node])
	}
	s := o.all.String()
	safe := max(o.emitted, len(s)-held)
	out := s[o.emitted:safe]
	o.emitted = safe
	return out, false
}

// flush returns the held-back text once generation ended without a stop string.
func (o *output) flush() string {
	if o.stopped >= 0 {
		return ""
	}
	o.all.WriteString(o.stream.Flush())
	s := o.all.String()
	text := s[o.emitted:]
	o.emitted = len(s)
	return text
}

// text is the final output: everything before the stop string (or up to its end, when
// included), if one was found.
func (o *output) text() string {
	s := o.all.String()
	if o.stopped >= 0 {
		return s[:o.end]
	}
	return s
}
