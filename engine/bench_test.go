package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkDecodeStep times greedy decode steps at batch 1 (the forward pass of one token
// and the choice of the next), eager against replayed graphs, side by side; the metric
// µs/step excludes the prefill (time to first token):
//
//	go test -run '^$' -bench DecodeStep ./engine/
func BenchmarkDecodeStep(b *testing.B) {
	const tokens = 33
	for _, model := range []string{"tiny", "demo"} {
		for _, tp := range []int{1, 8} {
			for _, eager := range []bool{true, false} {
				mode := "graph"
				if eager {
					mode = "eager"
				}
				b.Run(fmt.Sprintf("%s/tp=%d/%s", model, tp, mode), func(b *testing.B) {
					e, err := New(Config{Model: model, TP: tp, Eager: eager, MaxRunning: 1})
					if err != nil {
						b.Fatal(err)
					}
					defer e.Close()
					var decode time.Duration
					steps := 0
					for b.Loop() {
						res, err := e.Generate(context.Background(), Request{Prompt: "Hello my name is", MaxTokens: tokens}, func(Token) error { return nil })
						if err != nil {
							b.Fatal(err)
						}
						decode += time.Duration(float64(len(res.OutputIDs)-1) / res.DecodeTokensPerSec * float64(time.Second))
						steps += len(res.OutputIDs) - 1
					}
					b.ReportMetric(float64(decode.Microseconds())/float64(steps), "µs/step")
				})
			}
		}
	}
}
