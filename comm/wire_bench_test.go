package comm

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// BenchmarkWireSideBySide times one-shot and two-shot on 8 ranks on each wire, the three
// wires' calls interleaved in every iteration (one communicator per wire over the same
// node and inputs), so that the ratios come from the same moments of a noisy machine. The
// metrics are the wires' mean µs per call; ns/op is the three calls together.
//
//	go test -run '^$' -bench WireSideBySide ./comm/
func BenchmarkWireSideBySide(b *testing.B) {
	const n = 8
	for _, size := range []int{16 << 10, 256 << 10, 1 << 20} {
		for _, algo := range []Algo{OneShot, TwoShot} {
			b.Run(fmt.Sprintf("%v/%dB", algo, size), func(b *testing.B) {
				g := newGroup(b, n, device.NVSwitch, Config{})
				var cs []*Communicator
				for _, w := range Wires {
					c, err := New(g.node, Config{Wire: w})
					require.NoError(b, err)
					b.Cleanup(func() { _ = c.Close() })
					cs = append(cs, c)
				}
				count := size / 4
				ins, outs := g.alloc(b, dtype.F32, count), g.alloc(b, dtype.F32, count)
				Fill(ins, count, 1)
				spent := make([]time.Duration, len(cs))
				for b.Loop() {
					for i, c := range cs {
						start := time.Now()
						for r := range n {
							require.NoError(b, c.Rank(r).AllReduceAlgo(g.streams[r], algo, ins[r], outs[r], count))
						}
						for _, s := range g.streams {
							require.NoError(b, s.Synchronize())
						}
						spent[i] += time.Since(start)
					}
				}
				for i, w := range Wires {
					b.ReportMetric(float64(spent[i].Microseconds())/float64(b.N), w.String()+"-µs")
				}
			})
		}
	}
}
