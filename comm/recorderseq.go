package comm

import (
	"runtime"
	"sync/atomic"
)

// recorderSeq is the flight recorder's sequence word (a seqlock). Its writers are the
// rank's kernel side: a call's prologue and epilogue (open, close) and its blocks
// (setWhere), one after another but for a failing block beside block 0. Its readers are
// diagnostics on any goroutine: a failure's report, a dump, the metrics' totals. A
// writer takes the word from even to odd with one compare-and-swap, which also keeps a
// second writer out until it is done, changes the ring with plain stores and stores the
// next even value: a mutex's two locked instructions a section and no more, and no reader
// can hold the writer up. A reader copies what it needs between two reads of the word and
// copies again when a writer came in between, so a torn copy is never returned.
type recorderSeq struct{ word atomic.Uint64 }

// lock waits until no writer is inside and enters: the word is odd until unlock. Its
// first try is inlined: the writer is almost always alone.
func (s *recorderSeq) lock() (odd uint64) {
	if w := s.word.Load() &^ 1; s.word.CompareAndSwap(w, w+1) { // fails if w was odd
		return w + 1
	}
	return s.lockSlow()
}

func (s *recorderSeq) lockSlow() (odd uint64) {
	for {
		if w := s.word.Load(); w&1 == 0 && s.word.CompareAndSwap(w, w+1) {
			return w + 1
		}
		runtime.Gosched() // a writer's section is a few stores: it is about to leave
	}
}

// unlock leaves the section lock entered.
func (s *recorderSeq) unlock(odd uint64) { s.word.Store(odd + 1) }

// readBegin returns the word once no writer is inside.
func (s *recorderSeq) readBegin() uint64 {
	for {
		if w := s.word.Load(); w&1 == 0 {
			return w
		}
		runtime.Gosched()
	}
}

// readValid reports whether no writer entered since readBegin returned w, so that what
// was copied in between is whole. It reads the word with a read-modify-write, not a load:
// on a weakly ordered machine (arm64) its release half keeps the copy's plain loads
// before it, where a load-acquire would let them move after it.
func (s *recorderSeq) readValid(w uint64) bool { return s.word.Add(0) == w }

// The readers' copies. The writer's stores are plain, so a copy made while a writer is
// inside reads what the memory model calls a data race: these functions are go:norace,
// and their callers discard a copy unless readValid says no writer touched it. A torn
// string or error is only ever copied, never used.

//go:norace
func (r *Recorder) loadCount() uint64 { return r.n }

//go:norace
func (r *Recorder) loadEntry(i uint64) entry { return r.ring[i%recorderDepth] }

//go:norace
func (st *CollectiveStat) load() CollectiveStat { return *st }
