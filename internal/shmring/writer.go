package shmring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tpslice/tpslice/device"
)

// Writer broadcasts messages to the ring's readers and gathers their replies. One goroutine
// uses it at a time.
type Writer struct {
	*ring
	chunk uint64 // chunks written since the ring began
	sent  uint64 // messages sent
}

// NewWriter formats words (at least cfg.Words long, shared with the readers' processes) as
// a ring of cfg and returns its writer. Readers open it after this returns.
func NewWriter(words []uint64, cfg Config, waits Waits) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r, err := newRing(words, cfg, waits)
	if err != nil {
		return nil, err
	}
	clear(r.words)
	h := r.words[:wordsPerLine]
	h[hReaders], h[hSlots], h[hSlotBytes] = uint64(cfg.Readers), uint64(cfg.Slots), uint64(cfg.SlotBytes)
	h[hReplyBytes], h[hMaxMessage] = uint64(cfg.ReplyBytes), uint64(cfg.MaxMessage)
	atomic.StoreUint64(&h[hMagic], magic) // last: a reader that sees it sees the rest
	return &Writer{ring: r}, nil
}

// Wake makes every wait on the ring, in any process, look at its abort function again: call
// it once Waits.Abort returns an error (a reader died).
func (w *Writer) Wake() { w.wake() }

// Send broadcasts msg to every reader: chunk by chunk, each once every reader released the
// slot it reuses. It returns once the last chunk is published, not once it is read.
func (w *Writer) Send(msg []byte) error {
	if len(msg) > w.cfg.MaxMessage {
		return fmt.Errorf("shmring: message of %d bytes over the ring's limit of %d (Config.MaxMessage)", len(msg), w.cfg.MaxMessage)
	}
	total, rest := uint64(len(msg)), msg
	for range w.cfg.chunks(len(msg)) {
		g := w.chunk
		if err := w.awaitRelease(g); err != nil {
			return fmt.Errorf("%w (message %d of %d bytes)", err, w.sent+1, total)
		}
		seq, length, payload := w.slot(int(g % uint64(w.cfg.Slots)))
		rest = rest[copy(payload, rest):]
		*length = total              // plain: the atomic store below publishes it
		atomic.StoreUint64(seq, g+1) // after the payload: the chunk is published
		w.readers.Ring()
		w.chunk++
	}
	w.sent++
	return nil
}

// awaitRelease waits until every reader released the chunk that slot g mod K held, g−K.
func (w *Writer) awaitRelease(g uint64) error {
	k := uint64(w.cfg.Slots)
	if g < k {
		return nil
	}
	released := func(i int) bool { return atomic.LoadUint64(w.reader(i, rReleased)) > g-k }
	return w.wait(w.writer, func() bool {
		for i := range w.cfg.Readers {
			if !released(i) {
				return false
			}
		}
		return true
	}, func() string {
		for i := range w.cfg.Readers {
			if !released(i) {
				return fmt.Sprintf("writer waiting for reader %d to release chunk %d (slot %d)", i, g-k, (g-k)%k)
			}
		}
		return "writer waiting for the readers to release a slot"
	})
}

// Gather waits for every reader's reply to the last message sent and returns them, reader
// by reader, in dst's memory where it has room (dst may be nil). Readers answer only the
// messages the writer gathers, and the writer gathers one before it sends the next that
// wants answers: a reply slot holds one reply. With Waits.Lag, the readers still silent
// Lag after the first reply end it with a *SilentError, returned with the replies that
// came (nil for the silent readers).
func (w *Writer) Gather(dst [][]byte) ([][]byte, error) {
	if w.sent == 0 {
		return nil, fmt.Errorf("shmring: gather before any message was sent")
	}
	if len(dst) < w.cfg.Readers {
		dst = append(dst, make([][]byte, w.cfg.Readers-len(dst))...)
	}
	dst = dst[:w.cfg.Readers]
	answered := func(i int) bool { return atomic.LoadUint64(w.reader(i, rReply)) >= w.sent }
	var deadline time.Time // of the lag, once the first reply came
	if w.waits.Lag > 0 {
		anyAnswered := func() bool {
			for i := range w.cfg.Readers {
				if answered(i) {
					return true
				}
			}
			return false
		}
		err := w.wait(w.writer, anyAnswered, func() string {
			return fmt.Sprintf("writer waiting for the first reply to message %d", w.sent)
		})
		if err != nil {
			return nil, err
		}
		deadline = time.Now().Add(w.waits.Lag)
	}
	for i := range w.cfg.Readers {
		timeout, lagged := w.waits.Timeout, false
		if !deadline.IsZero() {
			left := max(time.Until(deadline), time.Nanosecond) // past it: one more look
			if timeout == 0 || left < timeout {
				timeout, lagged = left, true
			}
		}
		err := w.waitFor(w.writer, timeout, func() bool { return answered(i) }, func() string {
			return fmt.Sprintf("writer waiting for reader %d's reply to message %d", i, w.sent)
		})
		if err != nil && lagged && errors.Is(err, device.ErrDeadline) {
			return w.takeAnswered(dst, answered)
		}
		if err != nil {
			return nil, err
		}
		if err := w.take(dst, i); err != nil {
			return nil, err
		}
	}
	w.readers.Ring()
	return dst, nil
}

// Replied returns the number of the last message reader i replied to (counted from 1; 0
// before its first reply). Any goroutine may call it, also while Gather waits: a
// supervisor reads it to tell which readers a gather still waits for.
func (w *Writer) Replied(i int) uint64 { return atomic.LoadUint64(w.reader(i, rReply)) }

// take copies reader i's reply to the last message into dst[i] and gives the slot back.
func (w *Writer) take(dst [][]byte, i int) error {
	if got := atomic.LoadUint64(w.reader(i, rReply)); got != w.sent {
		return fmt.Errorf("shmring: reader %d replied to message %d, only %d were sent", i, got, w.sent)
	}
	length, payload := w.reply(i)
	if n := *length; n > uint64(w.cfg.ReplyBytes) {
		return fmt.Errorf("shmring: reader %d's reply of %d bytes is over the limit of %d", i, n, w.cfg.ReplyBytes)
	}
	dst[i] = append(dst[i][:0], payload[:*length]...)
	atomic.StoreUint64(w.reader(i, rTaken), w.sent) // after the copy: the slot is the reader's again
	return nil
}

// takeAnswered ends a gather past its lag: it returns the replies that came (nil for the
// silent readers), for what they say, and the *SilentError naming the rest.
func (w *Writer) takeAnswered(dst [][]byte, answered func(int) bool) ([][]byte, error) {
	silent := &SilentError{Message: w.sent, Lag: w.waits.Lag}
	for i := range w.cfg.Readers {
		if !answered(i) {
			silent.Readers = append(silent.Readers, i)
			dst[i] = nil
		} else if err := w.take(dst, i); err != nil {
			return nil, err
		}
	}
	w.readers.Ring()
	return dst, silent
}
