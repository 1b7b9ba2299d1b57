//go:build amd64 && !noasm

package quant

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/testutil"
)

// BenchmarkDotLockstep reports GB/s of weight bytes for the GEMVs of a decode step of the
// medium preset at TP 1 (BenchmarkDecodeGEMVs' 33 matrices, in layers), on one worker and
// on two, with the kernels of every instruction set this CPU runs as Dot runs them
// ("lockstep": AVX-512's Q8_0 and Q4_0 eight groups at a time and Q4_K four, AVX2's Q8_0
// eight and Q4_0 four; the other kernels one, Q5_K and Q6_K here for their cpuGB/s) beside
// the same kernels called one group at a time ("onegroup": one stream of weight bytes, the
// order of the kernels before them). cpuGB/s divides the bytes by the process's CPU time per
// worker, which holds still on a machine whose neighbours take the cores away for a while
// (the wall-clock MB/s then drops, cpuGB/s barely moves).
// Pair it with the read probe in the same command:
//
//	go test -run '^$' -bench 'DotLockstep|ReadBandwidth/256MiB' -benchtime 10x ./quant/ ./vec/
func BenchmarkDotLockstep(b *testing.B) {
	if len(asmISAs()) == 0 {
		b.Skip("this CPU runs no assembly kernels")
	}
	shapes := testutil.MediumDecodeStep()
	r := rand.New(rand.NewPCG(1, 1))
	x := randValues(r, 5632, 1)
	y := make([]float32, 16384)
	for _, typ := range []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K} {
		ws := make([][]byte, len(shapes))
		var total int64
		for k, s := range shapes {
			ws[k] = repeatedRowMatrix(b, r, typ, s.Out, s.In)
			total += int64(len(ws[k]))
		}
		a := ActsFor(typ)
		xq := make([]byte, a.RowBytes(5632))
		for _, isa := range asmISAs() {
			lockstep := isaGroups(isa)[typ]
			oneGroup := func(y *float32, w *byte, groups int, a *byte, n int) {
				gb := uintptr(GroupRows * n * typ.BlockBytes())
				for g := range uintptr(groups) {
					lockstep((*float32)(unsafe.Add(unsafe.Pointer(y), 4*GroupRows*g)), (*byte)(unsafe.Add(unsafe.Pointer(w), gb*g)), 1, a, n)
				}
			}
			for _, workers := range []int{1, 2} {
				for _, impl := range []struct {
					name string
					g    groupKernel
				}{{"lockstep", lockstep}, {"onegroup", oneGroup}} {
					b.Run(fmt.Sprintf("medium/%v/%s/workers=%d/impl=%s", typ, isa, workers, impl.name), func(b *testing.B) {
						b.SetBytes(total)
						cpu0 := testutil.CPUSeconds(b)
						for b.Loop() {
							for k, s := range shapes {
								require.NoError(b, QuantizeActs(a, xq[:a.RowBytes(s.In)], x[:s.In], s.In))
								run := func(o0, o1 int) { dotGroupsAsm(impl.g, typ, y, s.Out, xq, 1, ws[k], s.Out, s.In, o0, o1) }
								cut := s.Out
								var wg sync.WaitGroup
								if workers == 2 {
									cut = s.Out / 2 / GroupRows * GroupRows
									wg.Go(func() { run(cut, s.Out) })
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
}

// repeatedRowMatrix is a device matrix of rows × cols values of t whose rows all hold one
// row of normal values: real weights' bytes, made without quantizing the whole matrix.
func repeatedRowMatrix(b *testing.B, r *rand.Rand, t dtype.DType, rows, cols int) []byte {
	rb := t.Bytes(cols)
	ggml := make([]byte, rows*rb)
	require.NoError(b, Quantize(t, ggml[:rb], randValues(r, cols, 1)))
	for o := 1; o < rows; o++ {
		copy(ggml[o*rb:], ggml[:rb])
	}
	w := make([]byte, PackedBytes(t, rows, cols))
	require.NoError(b, Pack(t, w, ggml, rows, cols))
	return w
}
