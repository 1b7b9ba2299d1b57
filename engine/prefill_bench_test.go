package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/testutil"
)

// BenchmarkPrefill measures a 128-token prompt on the medium preset at TP 1 with f16, bf16,
// f32, Q8_0, Q4_0, Q4_K, Q6_K, Q5_K, Q5_0 and Q5_1 weights (the block types quantized on
// load), as llama-bench's pp 128: the prompt's tokens over the time to its first token (one
// forward pass of 128 rows, then the first token's sampling). cpuTok/s divides them by the
// process's CPU time instead (both cores' together, so about half tok/s on a quiet machine), which moves far
// less with the neighbours' load.
// TPSLICE_ISA=avx2 caps the kernels at AVX2, so that the AVX-512 GEMM and the AVX2 kernels
// compare in alternating runs of one binary:
//
//	go test -c -o /tmp/engine.test ./engine/
//	for i in 1 2 3; do for isa in avx512 avx2; do
//		TPSLICE_ISA=$isa /tmp/engine.test -test.run '^$' -test.bench Prefill -test.benchtime 5x
//	done; done
//
// The quantized types' GEMM compares with the GEMV it replaced through a test binary of
// the commit before it, built from `git archive`, run alternately with this one.
func BenchmarkPrefill(b *testing.B) {
	const promptLen = 128
	for _, dt := range []dtype.DType{dtype.F16, dtype.BF16, dtype.F32, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q6_K, dtype.Q5_K, dtype.Q5_0, dtype.Q5_1} {
		b.Run(fmt.Sprintf("medium/%v/tp=1/prompt=%d", dt, promptLen), func(b *testing.B) {
			e, err := New(Config{Model: "medium", TP: 1, WeightDType: dt, MaxRunning: 1, NoPrefixCaching: true})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ids := make([]int32, promptLen)
			for i := range ids {
				ids[i] = int32(3 + 7*i) // any ids of the vocabulary
			}
			var rates, cpuRates []float64
			for b.Loop() {
				cpu0 := testutil.CPUSeconds(b)
				res, err := e.Generate(context.Background(), Request{PromptIDs: ids, MaxTokens: 1}, func(Token) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				rates = append(rates, promptLen/res.TTFT.Seconds())
				cpuRates = append(cpuRates, promptLen/(testutil.CPUSeconds(b)-cpu0))
			}
			b.ReportMetric(median(rates), "tok/s")
			b.ReportMetric(median(cpuRates), "cpuTok/s")
		})
	}
}
