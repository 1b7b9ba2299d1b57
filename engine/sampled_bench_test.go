package engine

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkSampledBatch: 32 requests decoded together on demo at TP 8, greedy against
// sampled at the server's default temperature (1, a seed each), in output tok/s: the
// sampled rate over the greedy one is what `serve` at the default temperature can reach of
// `bench`'s greedy batch. Compare the two in one run (-count interleaves them).
func BenchmarkSampledBatch(b *testing.B) {
	e, err := New(Config{Model: "demo", TP: 8, NoPrefixCaching: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	for _, temperature := range []float32{0, 1} {
		b.Run(fmt.Sprintf("temperature=%g", temperature), func(b *testing.B) {
			reqs := make([]Request, 32)
			for i := range reqs {
				reqs[i] = Request{Prompt: fmt.Sprintf("Request %d asks for a story about a cat", i), MaxTokens: 32, IgnoreEOS: true,
					Sampling: Sampling{Temperature: temperature, Seed: uint64(i)}}
			}
			tokens := 0
			for b.Loop() {
				res, err := e.GenerateBatch(context.Background(), reqs, func(int, Token) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res {
					tokens += len(r.OutputIDs)
				}
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
