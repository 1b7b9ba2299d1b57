package comm

import (
	"testing"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// BenchmarkAllReduceWaitOneRank is a small call's own CPU, with no peer to wait for: one
// rank, a 1 KiB one-shot all-reduce, blocking, queued (AllReduceProto then Synchronize,
// through the stream's goroutine) or on the host (AllReduceWait). Run it with -cpu 1, as
// a 2-rank worker process runs.
func BenchmarkAllReduceWaitOneRank(b *testing.B) {
	g := newGroup(b, 1, device.NVSwitch, Config{})
	in, out := g.alloc(b, dtype.F32, 256), g.alloc(b, dtype.F32, 256)
	rk, s := g.c.Rank(0), g.streams[0]
	b.Run("queued", func(b *testing.B) {
		for b.Loop() {
			if err := rk.AllReduceProto(s, OneShot, ProtoAuto, in[0], out[0], 256); err != nil {
				b.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("host", func(b *testing.B) {
		for b.Loop() {
			if err := rk.AllReduceWait(s, OneShot, ProtoAuto, in[0], out[0], 256); err != nil {
				b.Fatal(err)
			}
		}
	})
}
