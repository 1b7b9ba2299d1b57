package comm

import (
	"fmt"
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
	Op    string // "allreduce", "reducescatter", "allgather" or a fused op ("allreduce+rmsnorm")
	Algo  Algo
	Proto Proto // LL or LL128 where the ring or the tree ran one; ProtoAuto for Simple
	DType dtype.DType
	Count int
	State CallState
	Start time.Time
	End   time.Time
	// Wait is how long the call sat blocked on its peers (block 0's waits): on a rank
	// that arrives first, most of a small call's time.
	Wait time.Duration
	// Where is what the call last waited for ("one-shot inputs staged") or where it failed,
	// in block 0 unless it names another ("block 1 one-shot inputs staged").
	Where string
	Err   error
	// Fault is the fault injected into the call (Config.Fault), if any.
	Fault FaultKind
}

// String describes the call in one line, as timeout errors print it.
func (r Record) String() string {
	s := fmt.Sprintf("seq %d %s %v %v count %d, %v", r.Seq, r.Op, Choice{r.Algo, r.Proto}, r.DType, r.Count, r.State)
	switch r.State {
	case Running:
		if !r.Start.IsZero() { // a peer process's record has no times
			s += fmt.Sprintf(" since %s", r.Start.Format("15:04:05.000000"))
		}
		if r.Where != "" {
			s += " at " + r.Where
		}
	case Done, Failed:
		if !r.End.IsZero() {
			s += fmt.Sprintf(" at %s", r.End.Format("15:04:05.000000"))
		}
		if r.State == Failed && r.Where != "" {
			s += " in " + r.Where
		}
	}
	if r.Fault != 0 {
		s += fmt.Sprintf(" (injected %v)", r.Fault)
	}
	return s
}

// Recorder is one rank's flight recorder: a ring of its most recent collective calls and
// the running totals of its calls. Its writers change it under the sequence word seq,
// without a lock; readers copy it and retry when a writer came in between
// (recorderseq.go).
type Recorder struct {
	seq recorderSeq
	// base is what the ring's times count from: the rank's call clock's base, so that a
	// call's start and end are one monotonic read each and become a time.Time only when
	// a reader asks for the record. Set before the rank's first call.
	base time.Time
	ring [recorderDepth]entry
	n    uint64 // records ever added
	totals
}

// entry is a Record as the ring holds it: its start and end as nanoseconds since the
// recorder's base.
type entry struct {
	seq        uint64
	op         string
	algo       Algo
	proto      Proto
	t          dtype.DType
	count      int
	state      CallState
	fault      FaultKind
	start, end int64 // since Recorder.base; end is read only once the call finished
	wait       time.Duration
	where      string
	err        error
}

// record returns the entry as a Record, its times counted from base.
func (e *entry) record(base time.Time) Record {
	rec := Record{Seq: e.seq, Op: e.op, Algo: e.algo, Proto: e.proto, DType: e.t, Count: e.count, State: e.state,
		Start: timeAt(base, e.start), Wait: e.wait, Where: e.where, Err: e.err, Fault: e.fault}
	if e.state != Running {
		rec.End = timeAt(base, e.end)
	}
	return rec
}

// open records a call that starts at start (nanoseconds since the recorder's base) and
// counts its message bytes in the running totals, in one section of the sequence word: a
// step's small collectives are dominated by such fixed costs. The record is written in
// place, field by field from the call's description, not built and then copied into the
// ring.
func (r *Recorder) open(d *callDesc, start int64, fault FaultKind) {
	w := r.seq.lock()
	e := &r.ring[r.n%recorderDepth]
	e.seq, e.op, e.algo, e.proto, e.t, e.count = d.seq, d.op, d.algo, d.proto, d.t, d.count
	e.state, e.start, e.end, e.wait, e.where, e.err, e.fault = Running, start, 0, 0, "", nil, fault
	r.n++
	r.count(d.op, d.algo, int64(d.count*d.t.Size()))
	r.seq.unlock(w)
}

// close records how the call of seq ended at end (nanoseconds since the recorder's base),
// if the ring still holds it; a record that failed already keeps its first failure.
func (r *Recorder) close(seq uint64, end int64, wait time.Duration, err error) {
	w := r.seq.lock()
	if e := &r.ring[seq%recorderDepth]; e.seq == seq && seq < r.n && e.state != Failed {
		e.end, e.state, e.err, e.wait = end, Done, err, wait
		if err != nil {
			e.state = Failed
		}
	}
	r.seq.unlock(w)
}

// setWhere records what the call of seq waits for or where it failed, if the ring still
// holds it (a host that runs more than recorderDepth calls ahead of its stream overwrites
// the oldest).
func (r *Recorder) setWhere(seq uint64, where string) {
	w := r.seq.lock()
	if e := &r.ring[seq%recorderDepth]; e.seq == seq && seq < r.n {
		e.where = where
	}
	r.seq.unlock(w)
}

// Last returns the most recent record, and false when the rank ran no collective yet.
func (r *Recorder) Last() (Record, bool) {
	for {
		w := r.seq.readBegin()
		n := r.loadCount()
		var e entry
		if n > 0 {
			e = r.loadEntry(n - 1)
		}
		if r.seq.readValid(w) {
			return e.record(r.base), n > 0
		}
	}
}

// Records returns the held records, oldest first.
func (r *Recorder) Records() []Record { return r.tail(recorderDepth) }

// tail returns the last k held records (k at most recorderDepth), oldest first: those
// held when it began, each whole; one that a writer's later call took the place of while
// tail copied the others is left out.
func (r *Recorder) tail(k int) []Record {
	var n uint64
	for w := r.seq.readBegin(); ; w = r.seq.readBegin() {
		if n = r.loadCount(); r.seq.readValid(w) {
			break
		}
	}
	k = int(min(n, uint64(k)))
	out := make([]Record, 0, k)
	for i := n - uint64(k); i < n; i++ {
		for {
			w := r.seq.readBegin()
			e := r.loadEntry(i)
			if r.seq.readValid(w) {
				if e.seq == i {
					out = append(out, e.record(r.base))
				}
				break
			}
		}
	}
	return out
}
