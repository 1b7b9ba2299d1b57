package engine

import (
	"fmt"
	"testing"
)

// BenchmarkDecodeStep times one greedy decode step (the forward pass of one token and the
// choice of the next) at batch 1, eager against a replayed graph, side by side:
//
//	go test -run '^$' -bench DecodeStep ./engine/
func BenchmarkDecodeStep(b *testing.B) {
	for _, model := range []string{"tiny", "demo"} {
		for _, tp := range []int{1, 8} {
			for _, eager := range []bool{true, false} {
				mode := "graph"
				if eager {
					mode = "eager"
				}
				b.Run(fmt.Sprintf("%s/tp=%d/%s", model, tp, mode), func(b *testing.B) {
					e, err := New(Config{Model: model, TP: tp, Eager: eager})
					if err != nil {
						b.Fatal(err)
					}
					defer e.Close()
					table, err := e.Blocks().Alloc(e.Model().Config().ContextLength / e.Model().Options().BlockSize)
					if err != nil {
						b.Fatal(err)
					}
					pos, next := 0, int32(1)
					for b.Loop() {
						st, err := e.run([]int32{next}, pos, table, 1)
						if err != nil {
							b.Fatal(err)
						}
						next = e.choose(st, Sampling{}, 0)
						pos = (pos + 1) % 64
					}
				})
			}
		}
	}
}
