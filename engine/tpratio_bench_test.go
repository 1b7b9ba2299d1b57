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
	const tokens = 33
	for _, dt := range []dtype.DType{dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K} {
		b.Run(dt.String(), func(b *testing.B) {
			var engines [2]*Engine
			for i, tp := range []int{1, 8} {
				var e *Engine
				var err error
				// The engine's goroutines inherit the label, so a CPU profile of this
				// benchmark splits by degree: -tagfocus degree=tp8.
				pprof.Do(context.Background(), pprof.Labels("degree", "tp"+strconv.Itoa(tp)), func(context.Context) {
					e, err = New(Config{Model: "medium", TP: tp, WeightDType: dt, MaxRunning: 1})
				})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				engines[i] = e
			}
			var rates, cpus [2][]float64
			var rateRatios, cpuRatios []float64
			i := 0
			for b.Loop() {
				var rate, cpu [2]float64
				for k := range 2 {
					at := (i + k) % 2 // alternate which degree runs first
					rate[at], cpu[at] = decodeOnce(b, engines[at], tokens)
				}
				i++
				for at := range 2 {
					rates[at], cpus[at] = append(rates[at], rate[at]), append(cpus[at], cpu[at])
				}
				rateRatios, cpuRatios = append(rateRatios, rate[1]/rate[0]), append(cpuRatios, cpu[1]/cpu[0])
			}
			b.ReportMetric(median(rates[0]), "tp1-tok/s")
			b.ReportMetric(median(rates[1]), "tp8-tok/s")
			b.ReportMetric(median(rateRatios), "tp8/tp1-tok/s")
			b.ReportMetric(median(cpus[0]), "tp1-cpuMs/tok")
			b.ReportMetric(median(cpus[1]), "tp8-cpuMs/tok")
			b.ReportMetric(median(cpuRatios), "tp8/tp1-cpuMs")
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
	const tokens = 33
	tps := []int{1, 2, 4, 8}
	for _, dt := range []dtype.DType{dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K} {
		b.Run(dt.String(), func(b *testing.B) {
			engines := make([]*Engine, len(tps))
			for i, tp := range tps {
				e, err := New(Config{Model: "medium", TP: tp, WeightDType: dt, MaxRunning: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				engines[i] = e
			}
			rates, ratios, extraCPU := make([][]float64, len(tps)), make([][]float64, len(tps)), make([][]float64, len(tps))
			i := 0
			for b.Loop() {
				rate, cpu := make([]float64, len(tps)), make([]float64, len(tps))
				for k := range tps {
					at := (i + k) % len(tps) // rotate which degree runs first
					rate[at], cpu[at] = decodeOnce(b, engines[at], tokens)
				}
				i++
				for k := range tps {
					rates[k] = append(rates[k], rate[k])
					ratios[k] = append(ratios[k], rate[k]/rate[0])
					extraCPU[k] = append(extraCPU[k], cpu[k]-cpu[0])
				}
			}
			for k, tp := range tps {
				b.ReportMetric(median(rates[k]), fmt.Sprintf("tp%d-tok/s", tp))
				if k > 0 {
					b.ReportMetric(median(ratios[k]), fmt.Sprintf("tp%d/tp1-tok/s", tp))
					b.ReportMetric(median(extraCPU[k]), fmt.Sprintf("tp%d-dcpuMs/tok", tp))
				}
			}
		})
	}
}
