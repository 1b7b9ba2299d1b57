package quant

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkDot reports GB/s of weight bytes for one row of activations (a decode GEMV)
// against Llama-3-8B shaped weights (out×in) of every type, on one worker and on two
// (goroutines splitting the rows, as two SMs do), every assembly kernel this CPU runs
// (AVX-512, AVX2) beside the portable Go one. Pair it with the machine's read bandwidth,
// measured by the same command:
//
//	go test -run '^$' -bench 'Dot|ReadBandwidth' -benchtime 20x ./quant/ ./vec/
func BenchmarkDot(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, shape := range []struct{ out, in int }{{1024, 1024}, {4096, 4096}, {14336, 4096}} {
		for _, typ := range blockTypes {
			ggml := make([]byte, shape.out*typ.Bytes(shape.in))
			x := randValues(r, shape.in, 1)
			require.NoError(b, Quantize(typ, ggml[:typ.Bytes(shape.in)], x)) // one real row, repeated
			for o := 1; o < shape.out; o++ {
				copy(ggml[o*typ.Bytes(shape.in):], ggml[:typ.Bytes(shape.in)])
			}
			w := make([]byte, PackedBytes(typ, shape.out, shape.in))
			require.NoError(b, Pack(typ, w, ggml, shape.out, shape.in))
			a := ActsFor(typ)
			xq := make([]byte, a.RowBytes(shape.in))
			require.NoError(b, QuantizeActs(a, xq, x, shape.in))
			y := make([]float32, shape.out)
			kernels := []struct {
				name string
				fn   func(o0, o1 int)
			}{{"go", func(o0, o1 int) { dotRowsGo(typ, y, shape.out, xq, 1, w, shape.out, shape.in, o0, o1) }}}
			for _, isa := range asmISAs() {
				kernels = append(kernels, struct {
					name string
					fn   func(o0, o1 int)
				}{isa, func(o0, o1 int) { dotRowsISA(isa, typ, y, shape.out, xq, 1, w, shape.out, shape.in, o0, o1) }})
			}
			for _, workers := range []int{1, 2} {
				for _, k := range kernels {
					b.Run(fmt.Sprintf("%dx%d/%v/workers=%d/impl=%s", shape.out, shape.in, typ, workers, k.name), func(b *testing.B) {
						b.SetBytes(int64(len(w)))
						for b.Loop() {
							var wg sync.WaitGroup
							for p := 1; p < workers; p++ {
								wg.Go(func() { k.fn(p*shape.out/workers, (p+1)*shape.out/workers) })
							}
							k.fn(0, shape.out/workers)
							wg.Wait()
						}
					})
				}
			}
		}
	}
}
