//go:build amd64 && !noasm

package quant

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/vec"
)

// TestPeakProbes: the probes run every instruction they are timed for (vnniPeakLoop's 16
// VPDPBUSD a round, addChainLoop's 8 ADDQ), so BenchmarkVNNIPeak's rates count real work.
func TestPeakProbes(t *testing.T) {
	if !vec.AcceleratedAVX512() {
		t.Skip("this CPU runs no AVX-512 VNNI kernels")
	}
	for _, n := range []int{0, 1, 7, 1000} {
		require.Equal(t, 64*n, vnniPeakLoop(n), "vnniPeakLoop(%d)", n)
		require.Equal(t, 8*n, addChainLoop(n), "addChainLoop(%d)", n)
	}
}

// BenchmarkVNNIPeak measures the cores' clock (GHz: dependent one-cycle adds a
// nanosecond) and their VPDPBUSD throughput (independent zmm VPDPBUSD a cycle, at that
// clock, all workers together), and so the int8 peak: 2·64 operations (a multiply and an
// add of each of 64 byte products) per VPDPBUSD. workers=2 runs the VPDPBUSD probe on two
// goroutines at once (as two SM workers run the GEMMs): where two virtual CPUs share a
// physical core's vector units it gets no more than one. Each iteration times the probes
// over a short run (tens of µs; longer with two workers, so starting the second is a small
// part) and the rates come from the fastest, so a neighbour taking
// a core away now and then does not lower them. The GEMM kernels' GFLOP/s
// (BenchmarkGEMMPaths, BenchmarkGEMMTile) count two operations per weight·activation
// product as this does, but their activations are 16-bit, two VPDPBUSD a product: their
// ceiling is half this peak.
//
//	go test -run '^$' -bench VNNIPeak -count 5 ./quant/
func BenchmarkVNNIPeak(b *testing.B) {
	if !vec.AcceleratedAVX512() {
		b.Skip("this CPU runs no AVX-512 VNNI kernels")
	}
	for _, workers := range []int{1, 2} {
		rounds := 1 << (12 + 3*(workers-1)) // 9 µs a core; 70 µs with a goroutine to start
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			adds, dps := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
			for b.Loop() {
				t0 := time.Now()
				addChainLoop(rounds)
				t1 := time.Now()
				var wg sync.WaitGroup
				for range workers - 1 {
					wg.Go(func() { vnniPeakLoop(rounds) })
				}
				vnniPeakLoop(rounds)
				wg.Wait()
				adds, dps = min(adds, t1.Sub(t0)), min(dps, time.Since(t1))
			}
			ghz := float64(8*rounds) / float64(adds.Nanoseconds())
			perNs := float64(16*rounds*workers) / float64(dps.Nanoseconds())
			b.ReportMetric(ghz, "GHz")
			b.ReportMetric(perNs/ghz, "VPDPBUSD/cycle")
			b.ReportMetric(2*64*perNs, "int8GOP/s")
		})
	}
}
