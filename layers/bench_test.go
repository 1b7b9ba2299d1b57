package layers

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/testutil"
	"github.com/tpslice/tpslice/quant"
)

// BenchmarkGEMV reports GB/s of weight bytes for one row of x against Llama-3-8B shaped
// weights (out×in), on one worker and on two (goroutines splitting the output rows in
// halves, as two SMs do), LinearRows ("asm" where the AVX2 kernels run, "exported"
// otherwise) side by side with the portable Go kernel ("go"). Compare with the machine's
// read bandwidth, BenchmarkReadBandwidth in vec, measured by the same command:
//
//	go test -run '^$' -bench 'GEMV|Bandwidth' -benchtime 20x ./layers/ ./vec/
func BenchmarkGEMV(b *testing.B) {
	benchLinear(b, 1, []struct{ out, in int }{{4096, 4096}, {14336, 4096}})
}

// BenchmarkLinearGEMM is BenchmarkGEMV for 8 and 16 rows of x (small-batch decode): every
// weight is still read once per call, so GB/s of weight bytes shows how far the kernels are
// from the memory roofline once the arithmetic grows M-fold. Reproduce with
//
//	go test -run '^$' -bench LinearGEMM -benchtime 20x ./layers/
func BenchmarkLinearGEMM(b *testing.B) {
	for _, m := range []int{8, 16} {
		b.Run(fmt.Sprintf("M=%d", m), func(b *testing.B) {
			benchLinear(b, m, []struct{ out, in int }{{4096, 4096}, {14336, 4096}})
		})
	}
}

func benchLinear(b *testing.B, m int, shapes []struct{ out, in int }) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, shape := range shapes {
		for _, dt := range dtypes {
			w := randMatrix(r, dt, shape.out, shape.in)
			x := randF32(r, m*shape.in, 1)
			y := make([]float32, m*shape.out)
			for _, workers := range []int{1, 2} {
				for _, impl := range linearKernels() {
					name := fmt.Sprintf("%dx%d/%v/workers=%d/impl=%s", shape.out, shape.in, dt, workers, impl.name)
					b.Run(name, func(b *testing.B) {
						b.SetBytes(int64(w.Bytes()))
						for b.Loop() {
							var wg sync.WaitGroup
							for k := 1; k < workers; k++ {
								o0, o1 := k*shape.out/workers, (k+1)*shape.out/workers
								wg.Go(func() { impl.fn(y, x, w, m, o0, o1) })
							}
							impl.fn(y, x, w, m, 0, shape.out/workers)
							wg.Wait()
						}
					})
				}
			}
		}
	}
}

// BenchmarkDecodeGEMVs reports GB/s of weight bytes for the GEMVs of one decode step of
// the medium preset at TP 1 (8 layers of a 4096×2048 QKV, a 2048×2048 O, an 11264×2048
// gate-up and a 2048×5632 down, then the 16384×2048 head: 33 matrices, 0.82 GB in f16),
// one matrix after another, on one worker or split between two and waited for, as the
// step's GEMMs run with nothing between them, and the same for one rank's shards at TP 8
// (medium-tp8: 512×2048, 2048×256, 1408×2048, 2048×704, then 2048×2048); f16 beside every block type, so that the
// kernels' reach of the memory is compared on the same bytes' pattern. cpuGB/s divides the
// bytes by the process's CPU time per worker: it holds still where neighbours take the
// cores away for a while, which the wall-clock MB/s does not:
//
//	go test -run '^$' -bench 'DecodeGEMVs|ReadBandwidth/256MiB' -benchtime 10x ./layers/ ./vec/
func BenchmarkDecodeGEMVs(b *testing.B) {
	steps := map[string][]testutil.Shape{"medium": testutil.MediumDecodeStep(), "medium-tp8": testutil.MediumDecodeStepTP8()}
	r := rand.New(rand.NewPCG(1, 1))
	x := randF32(r, 5632, 1)
	y := make([]float32, 16384)
	for _, step := range []string{"medium", "medium-tp8"} {
		for _, dt := range []dtype.DType{dtype.F16, dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q6_K} {
			shapes := steps[step]
			ws := make([]Matrix, len(shapes))
			var total int64
			for k, s := range shapes {
				bs := dt.BlockSize() // a shard keeps the whole blocks it cuts, as the model loads it
				ws[k] = repeatedRowMatrix(b, r, dt, s.Out, (s.In+bs-1)/bs*bs)
				total += int64(ws[k].Bytes())
			}
			var xq []byte
			if dt.Quantized() {
				xq = make([]byte, QuantizedInputBytes(Matrix{DType: dt, Cols: 5632}, 1))
			}
			for _, workers := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%v/workers=%d", step, dt, workers), func(b *testing.B) {
					b.SetBytes(total)
					cpu0 := testutil.CPUSeconds(b)
					for b.Loop() {
						for _, w := range ws {
							run := func(o0, o1 int) { require.NoError(b, LinearRows(y[:w.Rows], x[:w.Cols], w, o0, o1)) }
							if dt.Quantized() {
								a := quant.ActsFor(dt)
								require.NoError(b, quant.QuantizeActs(a, xq[:a.RowBytes(w.Cols)], x[:w.Cols], w.Cols))
								run = func(o0, o1 int) { require.NoError(b, LinearQuantRows(y[:w.Rows], xq, w, o0, o1)) }
							}
							cut := w.Rows // the second worker's rows begin at a whole group
							var wg sync.WaitGroup
							if workers == 2 {
								cut = w.Rows / 2 / quant.GroupRows * quant.GroupRows
								wg.Go(func() { run(cut, w.Rows) })
							}
							run(0, cut)
							wg.Wait()
						}
					}
					b.ReportMetric(float64(total)*float64(b.N)*float64(workers)/(testutil.CPUSeconds(b)-cpu0)/1e9, "cpuGB/s")
				})
			}
		}
	}
}

// repeatedRowMatrix is a rows×cols matrix of t whose rows all hold one row of normal
// values: real weights' bytes, made without quantizing the whole matrix.
func repeatedRowMatrix(b *testing.B, r *rand.Rand, t dtype.DType, rows, cols int) Matrix {
	row := randF32(r, cols, 1)
	if !t.Quantized() {
		bits := make([]uint16, rows*cols)
		for i := range bits {
			bits[i] = dtype.FromF32(t, row[i%cols])
		}
		return Matrix16(t, rows, cols, bits)
	}
	rb := t.Bytes(cols)
	ggml := make([]byte, rows*rb)
	require.NoError(b, quant.Quantize(t, ggml[:rb], row))
	for o := 1; o < rows; o++ {
		copy(ggml[o*rb:], ggml[:rb])
	}
	w := Matrix{DType: t, Rows: rows, Cols: cols, Data: make([]byte, quant.PackedBytes(t, rows, cols))}
	require.NoError(b, quant.Pack(t, w.Data, ggml, rows, cols))
	return w
}

// BenchmarkAttentionDecode is one decode token at several context lengths (blocks of 16), in
// the attention shapes of the medium preset (16 query heads, 8 kv heads, head dimension 128)
// and of Llama-3-8B (32, 8, 128), over an f32 and a bf16 cache; bytes are the K and V rows
// read. The assembly against the
// portable Go is this benchmark with and without -tags noasm, back to back:
//
//	go test -run '^$' -bench AttentionDecode -count 3 ./layers/ && go test -tags noasm -run '^$' -bench AttentionDecode -count 3 ./layers/
func BenchmarkAttentionDecode(b *testing.B) {
	const kvHeads, d, bs = 8, 128, 16
	r := rand.New(rand.NewPCG(2, 2))
	for _, shape := range []struct {
		name  string
		heads int
		ctxs  []int
	}{
		{"medium", 16, []int{512, 2048}},
		{"llama-3-8b", 32, []int{128, 1024, 4096}},
	} {
		for _, ctx := range shape.ctxs {
			for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
				b.Run(fmt.Sprintf("%s/ctx%d/kv=%v", shape.name, ctx, dt), func(b *testing.B) {
					f := newSeqFixtureOf(b, r, dt, kvHeads, d, bs, []int{ctx})
					batch := f.decodeBatch()
					q := randF32(r, shape.heads*d, 1)
					out := make([]float32, len(q))
					scratch := make([]float32, f.cache.AttentionScratchLen(shape.heads, ctx))
					b.SetBytes(int64(2 * ctx * kvHeads * d * dt.Size())) // K and V read
					for b.Loop() {
						if err := Attention(out, q, shape.heads, f.cache, 1, batch, scratch); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

func BenchmarkRMSNorm(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, rows := range []int{1, 16} {
		b.Run(fmt.Sprintf("%dx4096", rows), func(b *testing.B) {
			x, res, w := randF32(r, rows*4096, 1), randF32(r, rows*4096, 1), randF32(r, 4096, 1)
			out := make([]float32, len(x))
			b.SetBytes(int64(len(x) * 4))
			for b.Loop() {
				_ = RMSNormResidual(out, res, x, w, 1e-5)
			}
		})
	}
}

func BenchmarkRope(b *testing.B) {
	table, err := NewRopeTable(128, 4096, 500000)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	for _, layout := range []RopeLayout{RopeAdjacent, RopeHalfSplit} {
		b.Run(layout.String(), func(b *testing.B) {
			q, k := randF32(r, 32*128, 1), randF32(r, 8*128, 1)
			pos := []int32{1000}
			for b.Loop() {
				_ = table.Apply(layout, q, 32, k, 8, pos)
			}
		})
	}
}

func BenchmarkSwiGLU(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	gate, up := randF32(r, 14336, 4), randF32(r, 14336, 1)
	out := make([]float32, len(gate))
	b.SetBytes(int64(len(gate) * 4))
	for b.Loop() {
		_ = SwiGLU(out, gate, up)
	}
}

func BenchmarkEmbedding(b *testing.B) {
	r := rand.New(rand.NewPCG(6, 6))
	table := randMatrix(r, dtype.BF16, 16032, 4096)
	ids := []int32{5, 16000, 7000, 30000}
	out := make([]float32, len(ids)*4096)
	for b.Loop() {
		_ = Embedding(out, ids, table, 0, 128256)
	}
}

func BenchmarkTopK(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 7))
	logits := randF32(r, 128256/2, 10)
	for _, k := range []int{1, 50} {
		b.Run(fmt.Sprintf("k%d", k), func(b *testing.B) {
			dst := make([]Candidate, k)
			b.SetBytes(int64(len(logits) * 4))
			for b.Loop() {
				if k == 1 {
					_, _ = Argmax(logits, 0)
				} else {
					_, _ = TopK(dst, logits, 0)
				}
			}
		})
	}
}
