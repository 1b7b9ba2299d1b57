package comm

import (
	"fmt"
	"sync"
	"time"

	"github.com/tpslice/tpslice/dtype"
)

// recorderDepth is how many recent calls each rank's flight recorder keeps.
const recorderDepth = 256

// CallState is where a recorded collective call is.
type CallState uint8

// The states of a recorded call.
const (
	Running CallState = iota + 1 // its kernels run on the stream
	Done                         // finished without error
	Failed                       // finished with an error
)

// String names the state.
func (s CallState) String() string {
	return [...]string{"?", "running", "done", "failed"}[min(int(s), 3)]
}

// Record is what the flight recorder keeps of one collective call on one rank.
type Record struct {
	Seq   uint64
	Op    string // "allreduce" or "allgather"
	Algo  Algo
	DType dtype.DType
	Count int
	State CallState
	Start time.Time
	End   time.Time
	// Where is the last wait the call entered (e.g. "block 0 barrier 2").
	Where string
	Err   error
}

// String describes the call in one line, as timeout errors print it.
func (r Record) String() string {
	s := fmt.Sprintf("seq %d %s %v %v count %d, %v", r.Seq, r.Op, r.Algo, r.DType, r.Count, r.State)
	switch r.State {
	case Running:
		s += fmt.Sprintf(" since %s", r.Start.Format("15:04:05.000000"))
		if r.Where != "" {
			s += " at " + r.Where
		}
	case Done, Failed:
		s += fmt.Sprintf(" at %s", r.End.Format("15:04:05.000000"))
	}
	return s
}

// Recorder is one rank's flight recorder: a ring of its most recent collective calls.
type Recorder struct {
	mu   sync.Mutex
	ring [recorderDepth]Record
	n    uint64 // records ever added
}

func (r *Recorder) add(rec Record) {
	r.mu.Lock()
	r.ring[r.n%recorderDepth] = rec
	r.n++
	r.mu.Unlock()
}

// update changes the record of seq, if the ring still holds it (a host that runs more
// than recorderDepth calls ahead of its stream overwrites the oldest).
func (r *Recorder) update(seq uint64, fn func(*Record)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := &r.ring[seq%recorderDepth]; rec.Seq == seq && seq < r.n {
		fn(rec)
	}
}

// Last returns the most recent record, and false when the rank ran no collective yet.
func (r *Recorder) Last() (Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return Record{}, false
	}
	return r.ring[(r.n-1)%recorderDepth], true
}

// Records returns the held records, oldest first.
func (r *Recorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := min(r.n, recorderDepth)
	out := make([]Record, 0, k)
	for i := r.n - k; i < r.n; i++ {
		out = append(out, r.ring[i%recorderDepth])
	}
	return out
}
