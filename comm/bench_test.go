package comm

import (
	"fmt"
	"testing"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// BenchmarkAllReduce times one all-reduce on 8 ranks per algorithm (the ring and the tree
// under each protocol) and message size:
//
//	go test -run '^$' -bench AllReduce ./comm/
func BenchmarkAllReduce(b *testing.B) {
	const n = 8
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20, 8 << 20} {
		for _, ch := range Choices(Algos) {
			b.Run(fmt.Sprintf("%v/%dB", ch, size), func(b *testing.B) {
				g := newGroup(b, n, device.NVSwitch, Config{})
				count := size / 4
				ins, outs := g.alloc(b, dtype.F32, count), g.alloc(b, dtype.F32, count)
				b.SetBytes(int64(size))
				for b.Loop() {
					for r := range n {
						if err := g.c.Rank(r).AllReduceProto(g.streams[r], ch.Algo, ch.Proto, ins[r], outs[r], count); err != nil {
							b.Fatal(err)
						}
					}
					for _, s := range g.streams {
						if err := s.Synchronize(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}
