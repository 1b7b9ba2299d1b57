package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// BenchmarkDecodeRoofline measures batch-1 greedy decode on the medium preset (about 411M
// parameters) at TP 1 and 8 with f32, f16 and bf16 weights, and this machine's read
// bandwidth in the same run, and reports each case's fraction of that roofline: decode
// reads every weight once per token, so tokens/s × weight bytes can at best equal the read
// bandwidth.
//
//	go test -run '^$' -bench DecodeRoofline -benchtime 3x ./engine/
func BenchmarkDecodeRoofline(b *testing.B) {
	const tokens = 33
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} {
		for _, tp := range []int{1, 8} {
			b.Run(fmt.Sprintf("medium/%v/tp=%d", dt, tp), func(b *testing.B) {
				e, err := New(Config{Model: "medium", TP: tp, WeightDType: dt, MaxRunning: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				var weights int64
				for _, w := range e.Model().WeightBytes() {
					weights += w
				}
				// The roofline is measured next to each case, best of both sides, so a
				// neighbour's load on this shared machine hits both alike.
				readBW := vec.ReadBandwidth(runtime.GOMAXPROCS(0), 256<<20, 3)
				var tokPerSec float64
				for b.Loop() {
					res, err := e.Generate(context.Background(), Request{Prompt: "Hello my name is", MaxTokens: tokens}, func(Token) error { return nil })
					if err != nil {
						b.Fatal(err)
					}
					tokPerSec = max(tokPerSec, res.DecodeTokensPerSec)
				}
				readBW = max(readBW, vec.ReadBandwidth(runtime.GOMAXPROCS(0), 256<<20, 3))
				b.ReportMetric(tokPerSec, "tok/s")
				b.ReportMetric(tokPerSec*float64(weights)/1e9, "weightGB/s")
				b.ReportMetric(readBW/1e9, "readGB/s")
				b.ReportMetric(tokPerSec*float64(weights)/readBW, "roofline")
			})
		}
	}
}
