package quant

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// BenchmarkDotModel reports GB/s of weight bytes for the GEMVs of one decode step of the
// medium preset (8 layers of 2048-wide attention and a 5632-wide MLP, a 16384-row head: 33
// matrices, 250 MB in Q4_0), one matrix after another, on one goroutine or split between
// two and waited for, as a decode step's GEMMs run on two SMs with nothing between them:
// the floor of decode's GEMM time, to hold against the step's (tpslice bench) and the
// read bandwidth:
//
//	go test -run '^$' -bench 'DotModel|ReadBandwidth/256MiB' -benchtime 10x ./quant/ ./vec/
func BenchmarkDotModel(b *testing.B) {
	type shape struct{ out, in int }
	var shapes []shape
	for range 8 {
		shapes = append(shapes, shape{4096, 2048}, shape{2048, 2048}, shape{11264, 2048}, shape{2048, 5632})
	}
	shapes = append(shapes, shape{16384, 2048})
	r := rand.New(rand.NewPCG(1, 1))
	for _, typ := range []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q6_K} {
		ws := make([][]byte, len(shapes))
		var total int64
		for k, s := range shapes {
			ws[k] = make([]byte, PackedBytes(typ, s.out, s.in))
			for i := range ws[k] {
				ws[k][i] = byte(r.Uint32() & 0x33) // small values and scales
			}
			total += int64(len(ws[k]))
		}
		a := ActsFor(typ)
		x := randValues(r, 5632, 1)
		xq := make([]byte, a.RowBytes(5632))
		y := make([]float32, 16384)
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("medium/%v/workers=%d", typ, workers), func(b *testing.B) {
				b.SetBytes(total)
				for b.Loop() {
					for k, s := range shapes {
						require.NoError(b, QuantizeActs(a, xq[:a.RowBytes(s.in)], x[:s.in], s.in))
						cut := s.out // the second worker's rows begin at a whole group
						var wg sync.WaitGroup
						if workers == 2 {
							cut = s.out / 2 / GroupRows * GroupRows
							wg.Go(func() { Dot(typ, y, s.out, xq, 1, ws[k], s.out, s.in, cut, s.out) })
						}
						Dot(typ, y, s.out, xq, 1, ws[k], s.out, s.in, 0, cut)
						wg.Wait()
					}
				}
			})
		}
	}
}
