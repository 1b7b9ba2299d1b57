package engine

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"testing"

	"github.com/tpslice/tpslice/dtype"
)

// BenchmarkDecodeTPRatio decodes batch-1 greedy on the medium preset at TP 1 and TP 8 of
// the same weight type in one process, alternating the two engines every iteration (and
// which goes first), and reports the median of the pairwise ratios TP 8 / TP 1 of tok/s and
// of cpuMs/tok. Runs minutes apart on this shared machine differ by more than the two
// degrees do; a pair a few seconds apart shares its neighbours' load:
//
//	go test -run '^$' -bench 'DecodeTPRatio/q4_0' -benchtime 8x ./engine/
func BenchmarkDecodeTPRatio(b *testing.B) {
	for _, dt := range []dtype.DType{dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K} {
		b.Run(dt.String(), func(b *testing.B) {
			rates, cpus := decodeRotating(b, loadDegrees(b, dt, 1, 8))
			b.ReportMetric(median(rates[0]), "tp1-tok/s")
			b.ReportMetric(median(rates[1]), "tp8-tok/s")
			b.ReportMetric(median(pairwise(rates[1], rates[0], ratio)), "tp8/tp1-tok/s")
			b.ReportMetric(median(cpus[0]), "tp1-cpuMs/tok")
			b.ReportMetric(median(cpus[1]), "tp8-cpuMs/tok")
			b.ReportMetric(median(pairwise(cpus[1], cpus[0], ratio)), "tp8/tp1-cpuMs")
		})
	}
}

// BenchmarkDecodeTPScaling decodes batch-1 greedy on the medium preset at TP 1, 2, 4 and 8
// of one weight type in one process, rotating the four engines every iteration, and
// reports per degree the median tok/s, its ratio to TP 1 and dcpuMs: the median over the
// iterations of its process CPU ms a token (prefill included) minus TP 1's in the same
// iteration. On a machine of fewer cores than a group has ranks, dcpuMs growing linearly
// with the degree is work that every rank repeats (its all-reduce + RMSNorm, its launches,
// its attention call):
//
//	go test -run '^$' -bench 'DecodeTPScaling/q4_k' -benchtime 12x ./engine/
func BenchmarkDecodeTPScaling(b *testing.B) {
	tps := []int{1, 2, 4, 8}
	for _, dt := range []dtype.DType{dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K} {
		b.Run(dt.String(), func(b *testing.B) {
			rates, cpus := decodeRotating(b, loadDegrees(b, dt, tps...))
			for k, tp := range tps {
				b.ReportMetric(median(rates[k]), fmt.Sprintf("tp%d-tok/s", tp))
				if k > 0 {
					b.ReportMetric(median(pairwise(rates[k], rates[0], ratio)), fmt.Sprintf("tp%d/tp1-tok/s", tp))
					b.ReportMetric(median(pairwise(cpus[k], cpus[0], func(a, b float64) float64 { return a - b })), fmt.Sprintf("tp%d-dcpuMs/tok", tp))
				}
			}
		})
	}
}

// loadDegrees loads the medium preset in dt at each TP degree, closed when b ends. The
// engines' goroutines inherit a pprof label, so a CPU profile of the benchmark splits by
// degree: -tagfocus degree=tp8.
func loadDegrees(b *testing.B, dt dtype.DType, tps ...int) []*Engine {
	engines := make([]*Engine, len(tps))
	for i, tp := range tps {
		var err error
		pprof.Do(context.Background(), pprof.Labels("degree", "tp"+strconv.Itoa(tp)), func(context.Context) {
			engines[i], err = New(Config{Model: "medium", TP: tp, WeightDType: dt, MaxRunning: 1})
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { engines[i].Close() })
	}
	return engines
}

// decodeRotating runs decodeOnce on every engine each iteration, rotating which goes first,
// and returns each engine's tok/s and cpuMs/tok per iteration: the engines of one
// iteration share the machine's load of those seconds.
func decodeRotating(b *testing.B, engines []*Engine) (rates, cpus [][]float64) {
	const tokens = 33
	n := len(engines)
	rates, cpus = make([][]float64, n), make([][]float64, n)
	i := 0
	for b.Loop() {
		for k := range n {
			at := (i + k) % n
			rate, cpu := decodeOnce(b, engines[at], tokens)
			rates[at], cpus[at] = append(rates[at], rate), append(cpus[at], cpu)
		}
		i++
	}
	return rates, cpus
}

// pairwise is f of the two series' values of each iteration.
func pairwise(x, y []float64, f func(a, b float64) float64) []float64 {
	out := make([]float64, len(x))
	for i := range x {
		out[i] = f(x[i], y[i])
	}
	return out
}

func ratio(a, b float64) float64 { return a / b }
