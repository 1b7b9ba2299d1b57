package shmring

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/tpslice/tpslice/device"
)

// Waits bounds every wait of a Writer or a Reader.
type Waits struct {
	// Timeout ends a wait with an error wrapping device.ErrDeadline (0: no deadline).
	Timeout time.Duration
	// Abort, when it returns an error, ends every wait with an error wrapping both it and
	// device.ErrAborted: a peer process died. May be nil. Whoever makes it return an error
	// calls Wake.
	Abort func() error
	// Lag bounds how long, once one reader replied to a message, Gather waits for the
	// others (0: Timeout alone): a reader still silent then (stopped, hung) ends the gather
	// with a *SilentError naming it. The readers' own waits on each other (their
	// collectives' deadline) bound how far a live reader falls behind its peers.
	Lag time.Duration
}

// SilentError is Gather's error for the readers that did not reply to a message within
// Waits.Lag of the first reply. It wraps device.ErrDeadline.
type SilentError struct {
	Readers []int  // the readers that did not reply, in order
	Message uint64 // the message they did not answer (counted from 1)
	Lag     time.Duration
}

func (e *SilentError) Error() string {
	return fmt.Sprintf("shmring: readers %v did not reply to message %d within %v of the first reply", e.Readers, e.Message, e.Lag)
}

func (e *SilentError) Unwrap() error { return device.ErrDeadline }

// ring is what a Writer and a Reader share: the mapped words and their views.
type ring struct {
	cfg     Config
	words   []uint64
	bytes   []byte // words as bytes, for payload copies
	writer  *device.SharedBell
	readers *device.SharedBell
	waits   Waits
}

func newRing(words []uint64, cfg Config, waits Waits) (*ring, error) {
	if len(words) < cfg.Words() {
		return nil, fmt.Errorf("shmring: %d words of memory, the ring needs %d", len(words), cfg.Words())
	}
	r := &ring{cfg: cfg, words: words[:cfg.Words()], waits: waits,
		bytes: unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), cfg.Words()*8)}
	var err error
	if r.writer, err = device.NewSharedBell("ring writer", r.bell(lineWriterBell)); err != nil {
		return nil, err
	}
	if r.readers, err = device.NewSharedBell("ring readers", r.bell(lineReadersBell)); err != nil {
		return nil, err
	}
	return r, nil
}

// bell returns the 32-bit words of the bell on line.
func (r *ring) bell(line int) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(&r.words[line*wordsPerLine])), device.SharedBellWords)
}

// reader returns word w of reader i's line.
func (r *ring) reader(i, w int) *uint64 { return &r.words[(lineFirstReader+i)*wordsPerLine+w] }

// slot returns the sequence and length words of slot s and its payload.
func (r *ring) slot(s int) (seq, length *uint64, payload []byte) {
	off := r.cfg.firstSlot() + s*r.cfg.slotWords()
	return &r.words[off], &r.words[off+1], r.bytes[(off+2)*8 : (off+2)*8+r.cfg.SlotBytes]
}

// reply returns the length word of reader i's reply slot and its payload.
func (r *ring) reply(i int) (length *uint64, payload []byte) {
	off := r.cfg.firstReply() + i*r.cfg.replyWords()
	return &r.words[off], r.bytes[(off+1)*8 : (off+1)*8+r.cfg.ReplyBytes]
}

// wait waits on bell until ready, the deadline or the abort; an error says what was waited
// for (what) and, for an abort, why.
func (r *ring) wait(bell *device.SharedBell, ready func() bool, what func() string) error {
	return r.waitFor(bell, r.waits.Timeout, ready, what)
}

// waitFor is wait with a timeout of its own (0: none).
func (r *ring) waitFor(bell *device.SharedBell, timeout time.Duration, ready func() bool, what func() string) error {
	aborted := func() bool { return r.waits.Abort != nil && r.waits.Abort() != nil }
	err := bell.WaitUntil(timeout, aborted, ready)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, device.ErrAborted):
		return fmt.Errorf("shmring: %s: %w: %w", what(), err, r.waits.Abort())
	}
	return fmt.Errorf("shmring: %s: %w", what(), err)
}

// wake rings both bells of the ring, so that every waiter in every process looks at its
// abort function again.
func (r *ring) wake() {
	r.writer.Ring()
	r.readers.Ring()
}
