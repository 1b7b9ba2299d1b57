package shmring_test

import (
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/internal/shmring"
)

// waitLimit bounds every wait a test makes on work that should finish promptly: long enough
// never to fire on a loaded machine, short enough that a hang fails instead of stalling.
const waitLimit = 10 * time.Second

// message returns message i of a stream: random bytes of a random length, from 1 to well
// past a slot, so that messages split and wrap the ring at every offset.
func message(i, slotBytes int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 11))
	b := make([]byte, 1+r.IntN(3*slotBytes+slotBytes/2)) // never empty: the process tests stop on an empty message
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

// checksum is what a reader answers: an FNV-1a of the message, 8 bytes.
func checksum(msg []byte) []byte {
	h := fnv.New64a()
	h.Write(msg)
	return h.Sum(nil)
}

func newWriter(t *testing.T, cfg shmring.Config, waits shmring.Waits) (*shmring.Writer, []uint64) {
	t.Helper()
	words := make([]uint64, cfg.Words())
	w, err := shmring.NewWriter(words, cfg, waits)
	require.NoError(t, err)
	return w, words
}

func newReader(t *testing.T, words []uint64, i int, waits shmring.Waits) *shmring.Reader {
	t.Helper()
	r, err := shmring.NewReader(words, i, waits)
	require.NoError(t, err)
	return r
}

// TestBroadcastGoroutines streams thousands of messages of random sizes (some empty, many
// split over slots) through a small ring to readers on goroutines: each checks every byte
// and answers a checksum the writer checks. Under -race a payload copied outside the
// sequence words' order is a reported race.
func TestBroadcastGoroutines(t *testing.T) {
	for _, cfg := range []shmring.Config{
		{Readers: 1, Slots: 1, SlotBytes: 8, ReplyBytes: 8, MaxMessage: 1 << 10},
		{Readers: 3, Slots: 4, SlotBytes: 64, ReplyBytes: 8, MaxMessage: 1 << 10},
		{Readers: 7, Slots: 16, SlotBytes: 256, ReplyBytes: 16, MaxMessage: 1 << 12},
	} {
		t.Run("", func(t *testing.T) {
			const messages = 3000
			waits := shmring.Waits{Timeout: waitLimit}
			w, words := newWriter(t, cfg, waits)
			var wg sync.WaitGroup
			errs := make([]error, cfg.Readers)
			for i := range cfg.Readers {
				r := newReader(t, words, i, waits)
				wg.Go(func() {
					var buf []byte
					for m := range messages {
						var err error
						if buf, err = r.Recv(buf); err != nil {
							errs[i] = err
							return
						}
						if want := message(m, cfg.SlotBytes); string(buf) != string(want) {
							errs[i] = errors.New("a message arrived changed")
							return
						}
						if err := r.Reply(checksum(buf)); err != nil {
							errs[i] = err
							return
						}
					}
				})
			}
			var replies [][]byte
			for m := range messages {
				msg := message(m, cfg.SlotBytes)
				require.NoError(t, w.Send(msg), "message %d", m)
				var err error
				replies, err = w.Gather(replies)
				require.NoError(t, err, "message %d", m)
				for i, got := range replies {
					require.Equal(t, checksum(msg), got, "reader %d, message %d", i, m)
				}
			}
			wg.Wait()
			for i, err := range errs {
				require.NoError(t, err, "reader %d", i)
			}
		})
	}
}

// TestBroadcastRunsAhead sends many messages before the readers read any: the writer runs
// a full ring ahead, then waits for the slowest reader at every slot it reuses.
func TestBroadcastRunsAhead(t *testing.T) {
	cfg := shmring.Config{Readers: 2, Slots: 3, SlotBytes: 16, MaxMessage: 1 << 10}
	waits := shmring.Waits{Timeout: waitLimit}
	w, words := newWriter(t, cfg, waits)
	const messages = 2000
	var wg sync.WaitGroup
	errs := make([]error, cfg.Readers)
	for i := range cfg.Readers {
		r := newReader(t, words, i, waits)
		wg.Go(func() {
			time.Sleep(time.Millisecond) // the writer fills the ring first
			for m := range messages {
				msg, err := r.Recv(nil)
				if err != nil {
					errs[i] = err
					return
				}
				if string(msg) != string(message(m, cfg.SlotBytes)) {
					errs[i] = errors.New("a message arrived changed")
					return
				}
			}
		})
	}
	for m := range messages {
		require.NoError(t, w.Send(message(m, cfg.SlotBytes)), "message %d", m)
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "reader %d", i)
	}
}

// TestSlowReaderDeadline has reader 1 never read: once the writer is a ring ahead, Send
// waits for it and ends at its deadline with an error that names it.
func TestSlowReaderDeadline(t *testing.T) {
	cfg := shmring.Config{Readers: 2, Slots: 2, SlotBytes: 8, MaxMessage: 64}
	w, words := newWriter(t, cfg, shmring.Waits{Timeout: 20 * time.Millisecond})
	r0 := newReader(t, words, 0, shmring.Waits{Timeout: waitLimit})
	require.NoError(t, w.Send(make([]byte, 16))) // both slots
	_, err := r0.Recv(nil)
	require.NoError(t, err)
	err = w.Send([]byte("x"))
	require.ErrorIs(t, err, device.ErrDeadline)
	require.ErrorContains(t, err, "writer waiting for reader 1 to release chunk 0 (slot 0)")
	require.ErrorContains(t, err, "(message 2 of 1 bytes)")
}

// TestAbortNamesReader ends a writer's wait for a reader that will never answer with the
// abort's error: what a reader's death does. The deadline is an hour away, so only Wake
// reaching the sleeping writer ends the wait within the test's limit.
func TestAbortNamesReader(t *testing.T) {
	cfg := shmring.Config{Readers: 3, Slots: 1, SlotBytes: 8, ReplyBytes: 8, MaxMessage: 64}
	var dead atomic.Pointer[error]
	w, _ := newWriter(t, cfg, shmring.Waits{Timeout: time.Hour, Abort: func() error {
		if e := dead.Load(); e != nil {
			return *e
		}
		return nil
	}})
	require.NoError(t, w.Send([]byte("step")))
	done := make(chan error, 1)
	go func() {
		_, err := w.Gather(nil)
		done <- err
	}()
	time.Sleep(10 * time.Millisecond) // let the writer go to sleep in the kernel
	died := errors.New("rank 3 (pid 42) exited: signal: killed")
	dead.Store(&died)
	w.Wake()
	select {
	case err := <-done:
		require.ErrorIs(t, err, device.ErrAborted)
		require.ErrorContains(t, err, "writer waiting for reader 0's reply to message 1")
		require.ErrorContains(t, err, "rank 3 (pid 42) exited: signal: killed")
	case <-time.After(waitLimit):
		t.Fatal("the writer's wait did not end at the abort: Wake did not reach it")
	}
}

// TestReaderSeesOverrun corrupts a slot's sequence word as a writer that skipped the release
// wait would leave it: the reader says so instead of returning a stale chunk.
func TestReaderSeesOverrun(t *testing.T) {
	cfg := shmring.Config{Readers: 1, Slots: 2, SlotBytes: 8, MaxMessage: 64}
	w, words := newWriter(t, cfg, shmring.Waits{Timeout: waitLimit})
	r := newReader(t, words, 0, shmring.Waits{Timeout: waitLimit})
	require.NoError(t, w.Send([]byte("a")))
	atomic.StoreUint64(&words[shmring.FirstSlotWord(cfg)], 3) // chunk 2 in slot 0
	_, err := r.Recv(nil)
	require.ErrorContains(t, err, "shmring: reader 0: slot 0 holds chunk 2, want 0: the writer overran the reader")
}

// TestBadUse names each misuse instead of panicking or hanging.
func TestBadUse(t *testing.T) {
	cfg := shmring.Config{Readers: 2, Slots: 2, SlotBytes: 8, ReplyBytes: 8, MaxMessage: 16}
	waits := shmring.Waits{Timeout: waitLimit}
	w, words := newWriter(t, cfg, waits)
	r := newReader(t, words, 0, waits)

	require.ErrorContains(t, w.Send(make([]byte, 17)), "message of 17 bytes over the ring's limit of 16 (Config.MaxMessage)")
	_, err := w.Gather(nil)
	require.ErrorContains(t, err, "gather before any message was sent")
	require.ErrorContains(t, r.Reply(nil), "reader 0: reply with no message to answer (0 received, 0 answered)")
	require.NoError(t, w.Send(nil))
	msg, err := r.Recv(nil)
	require.NoError(t, err)
	require.Empty(t, msg)
	require.ErrorContains(t, r.Reply(make([]byte, 9)), "reader 0: reply of 9 bytes over the ring's limit of 8 (Config.ReplyBytes)")
	require.NoError(t, r.Reply(nil))
	require.ErrorContains(t, r.Reply(nil), "reply with no message to answer (1 received, 1 answered)")

	_, err = shmring.NewReader(words, 2, waits)
	require.ErrorContains(t, err, "reader 2 of a ring of 2 readers")
	_, err = shmring.NewReader(make([]uint64, 64), 0, waits)
	require.ErrorContains(t, err, "no ring in 64 words of memory")
	_, err = shmring.NewReader(words[:cfg.Words()-1], 0, waits)
	require.ErrorContains(t, err, "the ring needs")
	_, err = shmring.NewWriter(make([]uint64, 8), cfg, waits)
	require.ErrorContains(t, err, "8 words of memory, the ring needs")

	corrupt := append([]uint64(nil), words...)
	corrupt[2] = 0 // the header's slot count
	_, err = shmring.NewReader(corrupt, 0, waits)
	require.ErrorContains(t, err, "the ring's header is corrupt: shmring: 0 slots")
}

// TestConfigValidate names the field out of range.
func TestConfigValidate(t *testing.T) {
	ok := shmring.Config{Readers: 2, Slots: 4, SlotBytes: 64, ReplyBytes: 8, MaxMessage: 1 << 20}
	require.NoError(t, ok.Validate())
	for _, tc := range []struct {
		edit func(*shmring.Config)
		want string
	}{
		{func(c *shmring.Config) { c.Readers = 0 }, "0 readers"},
		{func(c *shmring.Config) { c.Slots = 0 }, "0 slots"},
		{func(c *shmring.Config) { c.SlotBytes = 12 }, "slot of 12 bytes, want a multiple of 8"},
		{func(c *shmring.Config) { c.ReplyBytes = -8 }, "reply of -8 bytes"},
		{func(c *shmring.Config) { c.MaxMessage = 1 << 33 }, "largest message of 8589934592 bytes"},
	} {
		c := ok
		tc.edit(&c)
		require.ErrorContains(t, c.Validate(), tc.want)
	}
}

// TestGatherLagNamesSilentReaders: with Waits.Lag and no deadline, a gather whose reader 1
// replied ends Lag later with a *SilentError naming the readers still silent (a stopped
// process), not a wait forever, and returns the reply that came; readers that reply within the lag of the first are
// gathered as usual.
func TestGatherLagNamesSilentReaders(t *testing.T) {
	cfg := shmring.Config{Readers: 3, Slots: 2, SlotBytes: 8, ReplyBytes: 8, MaxMessage: 64}
	w, words := newWriter(t, cfg, shmring.Waits{Lag: 50 * time.Millisecond})
	readers := make([]*shmring.Reader, 3)
	for i := range readers {
		readers[i] = newReader(t, words, i, shmring.Waits{Timeout: waitLimit})
	}
	answerErr := func(i int) error {
		msg, err := readers[i].Recv(nil)
		if err != nil {
			return err
		}
		return readers[i].Reply(checksum(msg))
	}
	answer := func(i int) { require.NoError(t, answerErr(i)) }
	require.NoError(t, w.Send([]byte("step 1")))
	answer(1)
	done := make(chan error, 1)
	var came [][]byte
	go func() {
		var err error
		came, err = w.Gather(nil)
		done <- err
	}()
	select {
	case err := <-done:
		require.Equal(t, [][]byte{nil, checksum([]byte("step 1")), nil}, came, "the reply that came, for what it says")
		var silent *shmring.SilentError
		require.ErrorAs(t, err, &silent)
		require.Equal(t, &shmring.SilentError{Readers: []int{0, 2}, Message: 1, Lag: 50 * time.Millisecond}, silent)
		require.ErrorIs(t, err, device.ErrDeadline)
		require.EqualError(t, err, "shmring: readers [0 2] did not reply to message 1 within 50ms of the first reply")
	case <-time.After(waitLimit):
		t.Fatal("the gather waited on the silent readers past its lag")
	}

	w, words = newWriter(t, cfg, shmring.Waits{Lag: waitLimit})
	for i := range readers {
		readers[i] = newReader(t, words, i, shmring.Waits{Timeout: waitLimit})
	}
	require.NoError(t, w.Send([]byte("step 1")))
	answer(2)
	late := make(chan error, 1)
	go func() {
		time.Sleep(20 * time.Millisecond) // behind the first, well within the lag
		late <- errors.Join(answerErr(0), answerErr(1))
	}()
	replies, err := w.Gather(nil)
	require.NoError(t, err)
	require.NoError(t, <-late)
	require.Len(t, replies, 3)
}
