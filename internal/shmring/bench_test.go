//go:build linux

package shmring_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/shmring"
)

// decodeStepBytes is what a decode step of batch 16 at 512 tokens of context (32 KV blocks
// a sequence), greedy, encodes to in internal/stepwire (its TestDecodeStepBytes).
const decodeStepBytes = 3041

// benchRing is a ring as the engine would size it: a step fits one slot.
var benchRing = shmring.Config{Slots: 4, SlotBytes: 64 << 10, ReplyBytes: replySize, MaxMessage: 16 << 20}

// BenchmarkStepRoundTrip prices one step across the process boundary: the driver broadcasts
// a step to the reader processes and waits for every reply (a batch's sampled ids), through
// the ring, and, as the baseline, through a message on each reader's SOCK_SEQPACKET socket.
// ns/op is the round trip; steps/s its inverse. ring-lag gathers with a Waits.Lag, as the
// engine's driver does (a first wait for any reply, then the rest).
func BenchmarkStepRoundTrip(b *testing.B) {
	for _, size := range []int{decodeStepBytes, 32 << 10} {
		for _, readers := range []int{1, 3} {
			msg := make([]byte, size)
			for i := range msg {
				msg[i] = byte(i)
			}
			name := fmt.Sprintf("bytes=%d/readers=%d", size, readers)
			cfg := benchRing
			cfg.Readers = readers
			for _, lag := range []time.Duration{0, time.Minute} { // ring-lag: the gather bounded as the engine's (Waits.Lag)
				variant := "ring/"
				if lag > 0 {
					variant = "ring-lag/"
				}
				b.Run(variant+name, func(b *testing.B) {
					d := newLaggedDriver(b, "echo", cfg, lag)
					var replies [][]byte
					var err error
					for b.Loop() {
						if replies, err = d.roundTrip(b, msg, replies); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
					require.NoError(b, d.ring.Load().Send(nil))
				})
			}
			b.Run("socket/"+name, func(b *testing.B) {
				d := newDriver(b, "socket", cfg)
				want := answer(msg)
				for b.Loop() {
					for _, c := range d.conns {
						if err := c.Send(ipc.Message{Body: msg}); err != nil {
							b.Fatal(err)
						}
					}
					for i, c := range d.conns {
						m, err := c.Recv()
						if err != nil || string(m.Body) != string(want) {
							b.Fatalf("reader %d: answer %x, %v", i, m.Body, err)
						}
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
				for _, c := range d.conns {
					require.NoError(b, c.Send(ipc.Message{Kind: kindStop}))
				}
			})
		}
	}
}
