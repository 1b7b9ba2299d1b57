package comm

import (
	"fmt"
	"strings"
)

// Flight is a snapshot of every rank's flight recorder: Ranks[r] holds rank r's most recent
// collective calls, oldest first; for a rank in another process, only its last, as its
// control buffer records it.
type Flight struct {
	Ranks [][]Record
}

// Flight returns the most recent calls of every rank, at most last per rank (0 or less:
// all that the recorders hold), for dumps on demand (a debug endpoint, a signal) and for
// failure reports.
func (c *Communicator) Flight(last int) Flight {
	if last <= 0 || last > recorderDepth {
		last = recorderDepth
	}
	f := Flight{Ranks: make([][]Record, c.n)}
	for r, rk := range c.ranks {
		if rk != nil {
			f.Ranks[r] = rk.rec.tail(last)
		} else if rec, ok := c.local[0].peers[r].lastRecord(); ok {
			f.Ranks[r] = []Record{rec}
		}
	}
	return f
}

// lastRecord returns the last collective the rank's control buffer records: what a rank
// in another process last did, without its times, wait or error.
func (v *peerView) lastRecord() (Record, bool) {
	d, state, ok := v.lastCall()
	if !ok {
		return Record{}, false
	}
	return Record{Seq: d.seq, Op: d.op, Algo: d.algo, Proto: d.proto, DType: d.t, Count: d.count, State: state}, true
}

// String writes one line per call, "rank R: seq S op algo dtype count N, state …", rank
// by rank, oldest first; a rank that ran no collective yet reads "rank R: no collective
// started".
func (f Flight) String() string { return f.format("") }

// format writes String's lines, each after indent.
func (f Flight) format(indent string) string {
	var sb strings.Builder
	for r, recs := range f.Ranks {
		if len(recs) == 0 {
			fmt.Fprintf(&sb, "%srank %d: no collective started\n", indent, r)
		}
		for _, rec := range recs {
			fmt.Fprintf(&sb, "%srank %d: %v\n", indent, r, rec)
		}
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// withFlight appends the last call of every rank to err, as a failure report names what
// each rank last did.
func (c *Communicator) withFlight(err error) error {
	return fmt.Errorf("%w\nlast call of each rank:\n%s", err, c.Flight(1).format("  "))
}
