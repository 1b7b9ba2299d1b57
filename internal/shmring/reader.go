package shmring

import (
	"fmt"
	"sync/atomic"
)

// Reader receives every message of a ring and replies to each. One goroutine uses it at a
// time.
type Reader struct {
	*ring
	index    int
	chunk    uint64 // chunks read since the ring began
	received uint64 // messages received
	replied  uint64 // the message number of the last reply
}

// NewReader opens the ring a Writer formatted in words as reader index, with the shape the
// writer wrote in its header.
func NewReader(words []uint64, index int, waits Waits) (*Reader, error) {
	if len(words) < wordsPerLine || atomic.LoadUint64(&words[hMagic]) != magic {
		return nil, fmt.Errorf("shmring: no ring in %d words of memory (no writer formatted it)", len(words))
	}
	h := words[:wordsPerLine]
	cfg := Config{Readers: int(h[hReaders]), Slots: int(h[hSlots]), SlotBytes: int(h[hSlotBytes]),
		ReplyBytes: int(h[hReplyBytes]), MaxMessage: int(h[hMaxMessage])}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("shmring: the ring's header is corrupt: %w", err)
	}
	if index < 0 || index >= cfg.Readers {
		return nil, fmt.Errorf("shmring: reader %d of a ring of %d readers", index, cfg.Readers)
	}
	r, err := newRing(words, cfg, waits)
	if err != nil {
		return nil, err
	}
	return &Reader{ring: r, index: index}, nil
}

// Wake makes every wait on the ring, in any process, look at its abort function again: call
// it once Waits.Abort returns an error (the driver died).
func (r *Reader) Wake() { r.wake() }

// Config is the ring's shape as its header says.
func (r *Reader) Config() Config { return r.cfg }

// Recv waits for the next message and returns it in buf's memory where it has room (buf
// may be nil), releasing each slot as soon as its chunk is copied.
func (r *Reader) Recv(buf []byte) ([]byte, error) {
	msg, want := buf[:0], uint64(0)
	for c := uint64(0); c < r.cfg.chunks(int(want)); c++ { // want is known after chunk 0
		g := r.chunk
		seq, length, payload := r.slot(int(g % uint64(r.cfg.Slots)))
		err := r.wait(r.readers, func() bool { return atomic.LoadUint64(seq) >= g+1 }, func() string {
			return fmt.Sprintf("reader %d waiting for chunk %d of message %d", r.index, g, r.received+1)
		})
		if err != nil {
			return nil, err
		}
		if got := atomic.LoadUint64(seq); got != g+1 {
			return nil, fmt.Errorf("shmring: reader %d: slot %d holds chunk %d, want %d: the writer overran the reader", r.index, g%uint64(r.cfg.Slots), got-1, g)
		}
		total := *length
		switch {
		case total > uint64(r.cfg.MaxMessage):
			return nil, fmt.Errorf("shmring: reader %d: message %d of %d bytes is over the ring's limit of %d", r.index, r.received+1, total, r.cfg.MaxMessage)
		case c == 0:
			want = total
		case total != want:
			return nil, fmt.Errorf("shmring: reader %d: chunk %d says message %d has %d bytes, its first chunk said %d", r.index, g, r.received+1, total, want)
		}
		n := min(uint64(r.cfg.SlotBytes), want-uint64(len(msg)))
		msg = append(msg, payload[:n]...)
		atomic.StoreUint64(r.reader(r.index, rReleased), g+1) // after the copy: the slot is free
		r.writer.Ring()
		r.chunk++
	}
	r.received++
	return msg, nil
}

// Reply sends p back to the writer as this reader's answer to the last message received. It
// waits until the writer took the previous reply.
func (r *Reader) Reply(p []byte) error {
	switch {
	case r.received == r.replied:
		return fmt.Errorf("shmring: reader %d: reply with no message to answer (%d received, %d answered)", r.index, r.received, r.replied)
	case len(p) > r.cfg.ReplyBytes:
		return fmt.Errorf("shmring: reader %d: reply of %d bytes over the ring's limit of %d (Config.ReplyBytes)", r.index, len(p), r.cfg.ReplyBytes)
	}
	taken := r.reader(r.index, rTaken)
	err := r.wait(r.readers, func() bool { return atomic.LoadUint64(taken) >= r.replied }, func() string {
		return fmt.Sprintf("reader %d waiting for the writer to take its reply to message %d", r.index, r.replied)
	})
	if err != nil {
		return err
	}
	length, payload := r.reply(r.index)
	copy(payload, p)
	*length = uint64(len(p))
	r.replied = r.received
	atomic.StoreUint64(r.reader(r.index, rReply), r.replied) // after the payload: published
	r.writer.Ring()
	return nil
}
