package engine

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/testutil"
	"github.com/tpslice/tpslice/vec"
)

// BenchmarkDecodeRoofline measures batch-1 greedy decode on the medium preset (about 411M
// parameters) at TP 1 and 8 with f32, f16 and bf16 weights and quantized on load to Q8_0,
// Q4_0 and Q4_K, and this machine's read bandwidth next to every run, and reports each
// case's fraction of that roofline: decode reads every weight once per token, so tokens/s ×
// weight bytes can at best equal the read bandwidth.
//
//	go test -run '^$' -bench DecodeRoofline -benchtime 5x ./engine/
func BenchmarkDecodeRoofline(b *testing.B) {
	const tokens = 33
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K} {
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
				// This machine's bandwidth swings with its neighbours' load (40–80 GB/s within
				// a minute), so every run is paired with read-bandwidth probes right before and
				// after it, and the median pair's ratio is reported.
				// cpuMs/tok, the process's CPU time over the tokens generated (prefill
				// included), moves far less with the neighbours' load than tok/s: it says
				// what a step costs the cores, including what its ranks spend waiting.
				var fractions, rates, bws, cpuMs []float64
				for b.Loop() {
					before := vec.ReadBandwidth(runtime.GOMAXPROCS(0), 256<<20, 1)
					rate, cpu := decodeOnce(b, e, tokens)
					bw := max(before, vec.ReadBandwidth(runtime.GOMAXPROCS(0), 256<<20, 1))
					rates, bws, cpuMs = append(rates, rate), append(bws, bw), append(cpuMs, cpu)
					fractions = append(fractions, rate*float64(weights)/bw)
				}
				b.ReportMetric(median(rates), "tok/s")
				b.ReportMetric(median(rates)*float64(weights)/1e9, "weightGB/s")
				b.ReportMetric(median(bws)/1e9, "readGB/s")
				b.ReportMetric(median(fractions), "roofline")
				b.ReportMetric(median(cpuMs), "cpuMs/tok")
			})
		}
	}
}

// decodeOnce generates tokens greedily after a short prompt and returns the decode's
// tokens/s and the process's CPU milliseconds per token generated (prefill included).
func decodeOnce(b *testing.B, e *Engine, tokens int) (tokPerSec, cpuMs float64) {
	cpu0, n := testutil.CPUSeconds(b), 0
	res, err := e.Generate(context.Background(), Request{Prompt: "Hello my name is", MaxTokens: tokens}, func(Token) error { n++; return nil })
	if err != nil {
		b.Fatal(err)
	}
	return res.DecodeTokensPerSec, (testutil.CPUSeconds(b) - cpu0) * 1e3 / float64(n)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
