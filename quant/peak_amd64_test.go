//go:build amd64 && !noasm

package quant

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/vec"
)

// TestPeakProbes: the probes run every instruction they are timed for (vnniPeakLoop's 16
// VPDPBUSD a round, fmaPeakLoop's 16 VFMADD231PS, addChainLoop's 8 ADDQ), so
// BenchmarkVNNIPeak's and BenchmarkFMAPeak's rates count real work.
func TestPeakProbes(t *testing.T) {
	if !vec.AcceleratedAVX512() {
		t.Skip("this CPU runs no AVX-512 VNNI kernels")
	}
	for _, n := range []int{0, 1, 7, 1000} {
		require.Equal(t, 64*n, vnniPeakLoop(n), "vnniPeakLoop(%d)", n)
		require.Equal(t, 16*n, fmaPeakLoop(n), "fmaPeakLoop(%d)", n)
		require.Equal(t, 8*n, addChainLoop(n), "addChainLoop(%d)", n)
	}
}

// BenchmarkVNNIPeak measures one core's clock (GHz: dependent one-cycle adds a
// nanosecond) and its VPDPBUSD throughput (independent zmm VPDPBUSD a cycle, at that
// clock), and so its int8 peak: 2·64 operations (a multiply and an add of each of 64 byte
// products) per VPDPBUSD. The machine's peak is the cores' sum where they scale
// (BenchmarkGEMMWorkers' x_two). Each iteration times both probes back to back over a
// short run (tens of µs) and the rates come from the fastest, so a neighbour taking the
// core away now and then does not lower them. The GEMM kernels' GFLOP/s
// (BenchmarkGEMMPaths, BenchmarkGEMMTile) count two operations per weight·activation
// product as this does, but their activations are 16-bit, two VPDPBUSD a product: their
// ceiling is half this peak.
//
//	go test -run '^$' -bench VNNIPeak -benchtime 2000x ./quant/
func BenchmarkVNNIPeak(b *testing.B) {
	if !vec.AcceleratedAVX512() {
		b.Skip("this CPU runs no AVX-512 VNNI kernels")
	}
	ghz, perNs := peakProbe(b, vnniPeakLoop)
	b.ReportMetric(ghz, "GHz")
	b.ReportMetric(perNs/ghz, "VPDPBUSD/cycle")
	b.ReportMetric(2*64*perNs, "int8GOP/s")
}

// BenchmarkFMAPeak measures one core's clock (as BenchmarkVNNIPeak does) and its zmm
// VFMADD231PS throughput (independent ones a cycle, at that clock), and so its f32 peak:
// 2·16 operations (a multiply and an add in each of 16 lanes) per VFMADD231PS. That is the
// ceiling of the f32, f16 and bf16 GEMMs (layers' BenchmarkGEMMPaths), which widen their
// weights to f32 and fuse one product per lane in the same instruction and count their
// GFLOP/s the same way. Each iteration times both probes back to back over a short run and
// the rates come from the fastest.
//
//	go test -run '^$' -bench FMAPeak -benchtime 2000x ./quant/
func BenchmarkFMAPeak(b *testing.B) {
	if !vec.AcceleratedAVX512() {
		b.Skip("this CPU runs no AVX-512 kernels")
	}
	ghz, perNs := peakProbe(b, fmaPeakLoop)
	b.ReportMetric(ghz, "GHz")
	b.ReportMetric(perNs/ghz, "VFMADD231PS/cycle")
	b.ReportMetric(2*16*perNs, "f32GFLOP/s")
}

// peakProbe times addChainLoop (a chain of 8 dependent adds a round: the clock) and loop
// (16 independent instructions a round) back to back every iteration, and gives the clock
// in GHz and loop's instructions a nanosecond, each from its fastest run.
func peakProbe(b *testing.B, loop func(rounds int) int) (ghz, perNs float64) {
	const rounds = 1 << 12
	adds, peak := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for b.Loop() {
		t0 := time.Now()
		addChainLoop(rounds)
		t1 := time.Now()
		loop(rounds)
		adds, peak = min(adds, t1.Sub(t0)), min(peak, time.Since(t1))
	}
	return 8 * rounds / float64(adds.Nanoseconds()), 16 * rounds / float64(peak.Nanoseconds())
}
