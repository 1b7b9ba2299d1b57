package comm

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/tpslice/tpslice/device"
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

// recorderLock is the recorder's lock: a compare-and-swap takes it, a release store gives it
// back (device.StoreRelease32), where sync.Mutex's Unlock is a second locked instruction,
// and a call takes the lock twice. Its holders run a few stores, so a contender only yields.
type recorderLock struct{ held uint32 }

func (l *recorderLock) Lock() {
	for !atomic.CompareAndSwapUint32(&l.held, 0, 1) {
		runtime.Gosched()
	}
}

func (l *recorderLock) Unlock() { device.StoreRelease32(&l.held, 0) }

// Recorder is one rank's flight recorder: a ring of its most recent collective calls.
type Recorder struct {
	mu recorderLock
	// base is what the ring's times count from: the rank's call clock's base, so that a
	// call's start and end are one monotonic read each and become a time.Time only when
	// a reader asks for the record.
	base  time.Time
	ring  [recorderDepth]entry
	n     uint64 // records ever added
	stats map[statKey]*CollectiveStat
	last  *CollectiveStat // the totals countLocked updated last
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
// counts its message bytes in the running totals: one lock a call, where a step's small
// collectives are dominated by such fixed costs. The record is written in place, field by
// field from the call's description, not built and then copied into the ring.
func (r *Recorder) open(d *callDesc, start int64, fault FaultKind) {
	r.mu.Lock()
	e := &r.ring[r.n%recorderDepth]
	e.seq, e.op, e.algo, e.proto, e.t, e.count = d.seq, d.op, d.algo, d.proto, d.t, d.count
	e.state, e.start, e.end, e.wait, e.where, e.err, e.fault = Running, start, 0, 0, "", nil, fault
	r.n++
	r.countLocked(d.op, d.algo, int64(d.count*d.t.Size()))
	r.mu.Unlock()
}

// close records how the call of seq ended at end (nanoseconds since the recorder's base),
// if the ring still holds it; a record that failed already keeps its first failure.
func (r *Recorder) close(seq uint64, end int64, wait time.Duration, err error) {
	r.mu.Lock()
	if e := &r.ring[seq%recorderDepth]; e.seq == seq && seq < r.n && e.state != Failed {
		e.end, e.state, e.err, e.wait = end, Done, err, wait
		if err != nil {
			e.state = Failed
		}
	}
	r.mu.Unlock()
}

// setWhere records what the call of seq waits for or where it failed, if the ring still
// holds it (a host that runs more than recorderDepth calls ahead of its stream overwrites
// the oldest).
func (r *Recorder) setWhere(seq uint64, where string) {
	r.mu.Lock()
	if e := &r.ring[seq%recorderDepth]; e.seq == seq && seq < r.n {
		e.where = where
	}
	r.mu.Unlock()
}

// Last returns the most recent record, and false when the rank ran no collective yet.
func (r *Recorder) Last() (Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return Record{}, false
	}
	return r.ring[(r.n-1)%recorderDepth].record(r.base), true
}

// Records returns the held records, oldest first.
func (r *Recorder) Records() []Record { return r.tail(recorderDepth) }

// tail returns the last k held records (k at most recorderDepth), oldest first.
func (r *Recorder) tail(k int) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	k = int(min(r.n, uint64(k)))
	out := make([]Record, 0, k)
	for i := r.n - uint64(k); i < r.n; i++ {
		out = append(out, r.ring[i%recorderDepth].record(r.base))
	}
	return out
}

// CollectiveStat counts one rank's collective calls of one op and algorithm.
type CollectiveStat struct {
	Op    string
	Algo  Algo
	Calls int64
	// Bytes sums the calls' message sizes (the elements each rank contributes × their size).
	Bytes int64
}

type statKey struct {
	op   string
	algo Algo
}

// countLocked adds a call to the recorder's running totals, which unlike the ring never
// drop. The last call's totals are kept at hand: a rank repeats one op and algorithm far
// more often than it switches, and the map's hash of the op name is most of the cost.
func (r *Recorder) countLocked(op string, a Algo, bytes int64) {
	st := r.last
	if st == nil || st.Op != op || st.Algo != a {
		if r.stats == nil {
			r.stats = map[statKey]*CollectiveStat{}
		}
		var ok bool
		if st, ok = r.stats[statKey{op, a}]; !ok {
			st = &CollectiveStat{Op: op, Algo: a}
			r.stats[statKey{op, a}] = st
		}
		r.last = st
	}
	st.Calls++
	st.Bytes += bytes
}

// Stats returns the rank's collective calls and bytes by op and algorithm since the
// communicator was created.
func (r *Recorder) Stats() []CollectiveStat {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]CollectiveStat, 0, len(r.stats))
	for _, st := range r.stats {
		out = append(out, *st)
	}
	return out
}
