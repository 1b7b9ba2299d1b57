package comm

import "sync"

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

// totals are a recorder's running totals, which unlike the ring never drop. Their counts
// change in the writer's section of the recorder's sequence word; the map only gains
// entries, under mu, which readers hold to list them, never while they wait on the word.
type totals struct {
	mu    sync.Mutex
	stats map[statKey]*CollectiveStat
	last  *CollectiveStat // the totals count updated last (writer side)
}

// count adds a call to the running totals, in a writer's section. The last call's totals
// are kept at hand: a rank repeats one op and algorithm far more often than it switches,
// and the map's hash of the op name is most of the cost.
func (r *Recorder) count(op string, a Algo, bytes int64) {
	st := r.last
	if st == nil || st.Op != op || st.Algo != a {
		r.mu.Lock()
		if r.stats == nil {
			r.stats = map[statKey]*CollectiveStat{}
		}
		var ok bool
		if st, ok = r.stats[statKey{op, a}]; !ok {
			st = &CollectiveStat{Op: op, Algo: a}
			r.stats[statKey{op, a}] = st
		}
		r.mu.Unlock()
		r.last = st
	}
	st.Calls++
	st.Bytes += bytes
}

// Stats returns the rank's collective calls and bytes by op and algorithm since the
// communicator was created, each op's calls and bytes counted up to the same call.
func (r *Recorder) Stats() []CollectiveStat {
	r.mu.Lock()
	held := make([]*CollectiveStat, 0, len(r.stats))
	for _, st := range r.stats {
		held = append(held, st)
	}
	r.mu.Unlock()
	out := make([]CollectiveStat, len(held))
	for w := r.seq.readBegin(); ; w = r.seq.readBegin() {
		for i, st := range held {
			out[i] = st.load()
		}
		if r.seq.readValid(w) {
			return out
		}
	}
}
