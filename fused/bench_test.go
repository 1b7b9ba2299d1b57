package fused

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tpslice/tpslice/comm"
)

// BenchmarkFused compares each fused variant with the unfused pair built on the same
// all-reduce algorithm (the all-reduce, then a separate residual + RMSNorm kernel), on 8
// ranks at decode and prefill shapes:
//
//	go test -run '^$' -bench Fused ./fused/
func BenchmarkFused(b *testing.B) {
	for _, tokens := range []int{1, 8, 32, 256} {
		sh := Shape{Tokens: tokens, Hidden: 4096, Eps: 1e-5}
		for _, v := range []Variant{OneShot, TwoShot, NVLS, Tree} {
			for _, fuse := range []bool{false, true} {
				name := "unfused"
				if fuse {
					name = "fused"
				}
				b.Run(fmt.Sprintf("tokens=%d/%v/%s", tokens, v, name), func(b *testing.B) {
					g := newRig(b, 8, comm.Config{Algo: v.algo()})
					g.load(b, sh)
					run := v
					if !fuse {
						run = Unfused // its all-reduce is the forced v.algo()
					}
					b.SetBytes(int64(tokens * sh.Hidden * 4))
					for b.Loop() {
						g.run(b, run, sh)
					}
				})
			}
		}
	}
}

// BenchmarkSeqParallel compares the fused sequence-parallel variant (reduce-scatter,
// residual + RMSNorm on each rank's rows, all-gather) with the fused one-shot and two-shot
// and with its own unfused pair (reduce-scatter, norm kernel, two all-gathers; where 8
// divides the tokens), on 8 ranks at the hidden sizes of the demo (512) and medium (2048)
// presets. Every iteration runs each of them once, in rotating order, so that a machine
// shared with other work slows them alike; each reports its median µs per call:
//
//	go test -run '^$' -bench SeqParallel ./fused/
func BenchmarkSeqParallel(b *testing.B) {
	const n = 8
	for _, hidden := range []int{512, 2048} {
		for _, tokens := range []int{1, 4, 16, 64, 256, 1024} {
			b.Run(fmt.Sprintf("hidden=%d/tokens=%d", hidden, tokens), func(b *testing.B) {
				sh := Shape{Tokens: tokens, Hidden: hidden, Eps: 1e-5}
				g := newRig(b, n, comm.Config{Algo: comm.OneShot}) // the pair's reduce-scatter is direct either way
				g.load(b, sh)
				type contender struct {
					name string
					run  func()
				}
				variant := func(v Variant) contender { return contender{v.String(), func() { g.run(b, v, sh) }} }
				runs := []contender{variant(OneShot), variant(TwoShot), variant(SeqParallel)}
				if tokens%n == 0 {
					runs = append(runs, contender{"seqparallel-pair", func() {
						for r := range n {
							if err := seqParallelPair(g.c.Rank(r), g.streams[r], g.partial[r], g.residual[r], g.weight[r], g.out[r], sh); err != nil {
								b.Fatal(err)
							}
						}
						g.sync(b)
					}})
				}
				times := make([][]time.Duration, len(runs))
				round := 0
				for b.Loop() {
					for k := range runs {
						j := (k + round) % len(runs)
						start := time.Now()
						runs[j].run()
						times[j] = append(times[j], time.Since(start))
					}
					round++
				}
				for j, c := range runs {
					slices.Sort(times[j])
					b.ReportMetric(float64(times[j][len(times[j])/2].Nanoseconds())/1e3, c.name+"-µs")
				}
			})
		}
	}
}
