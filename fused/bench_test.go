package fused

import (
	"fmt"
	"testing"

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
