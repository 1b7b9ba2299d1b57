//go:build amd64 && !noasm

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/testutil"
	"github.com/tpslice/tpslice/vec"
)

// requireGEMMMatchesGo runs the GEMM of typ, Dot (which picks a path by M) and the GEMV
// kernels of every instruction set once per row, and requires each bitwise the Go
// reference, with untouched guards around the outputs.
func requireGEMMMatchesGo(t *testing.T, typ dtype.DType, w, xq []byte, rows, cols, m, o0, o1 int) {
	t.Helper()
	stride := rows + 3
	run := func(fn func(y []float32)) []float32 {
		y := make([]float32, m*stride)
		for i := range y {
			y[i] = guard
		}
		fn(y)
		return y
	}
	want := run(func(y []float32) { dotRowsGo(typ, y, stride, xq, m, w, rows, cols, o0, o1) })
	paths := map[string][]float32{
		"gemm": run(func(y []float32) {
			gemmGroupsAsm(avx512GEMMs[typ], avx512Groups[typ], typ, y, stride, xq, m, w, rows, cols, o0, o1)
		}),
		"Dot": run(func(y []float32) { Dot(typ, y, stride, xq, m, w, rows, cols, o0, o1) }),
	}
	for _, isa := range asmISAs() {
		paths[isa+" gemv"] = run(func(y []float32) { dotRowsISA(isa, typ, y, stride, xq, m, w, rows, cols, o0, o1) })
	}
	for name, got := range paths {
		for i := range want {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s, %v M=%d [%d, %d) of %d×%d: output %d (row %d of x, weight row %d): Go %v, got %v",
				name, typ, m, o0, o1, rows, cols, i, i/stride, i%stride, want[i], got[i])
		}
	}
}

// TestGEMMKernels: the AVX-512 GEMM of each type that has one, Dot and the AVX-512 and
// AVX2 GEMV kernels are bitwise the Go reference on fuzzed shapes: M = 2..64 rows of
// activations (a last tile of one to three rows), weight rows that end inside a group, an
// odd number of blocks a row that crosses the span of columns a call takes, and output
// ranges that begin and end inside the matrix.
func TestGEMMKernels(t *testing.T) {
	if !vec.AcceleratedAVX512() {
		t.Skip("this CPU runs no AVX-512 VNNI kernels")
	}
	r := rand.New(rand.NewPCG(41, 42))
	for typ := range avx512GEMMs {
		t.Run(typ.String(), func(t *testing.T) {
			for trial := range 24 {
				m := 2 + r.IntN(63)
				if trial < 2 {
					m = []int{4, 64}[trial]
				}
				groups := 1 + r.IntN(5)
				rows := GroupRows*groups - r.IntN(GroupRows)
				cols := typ.BlockSize() * (1 + 2*r.IntN(avx512GEMMs[typ].span+3)) // odd blocks, up to 2 spans
				w := randRows(t, r, typ, rows, cols)
				a := ActsFor(typ)
				xq := make([]byte, m*a.RowBytes(cols))
				require.NoError(t, QuantizeActs(a, xq, randValues(r, m*cols, 1), cols))
				o0 := GroupRows * r.IntN(groups)
				o1 := rows
				if g := o0/GroupRows + 1 + r.IntN(groups-o0/GroupRows); g < groups {
					o1 = GroupRows * g
				}
				requireGEMMMatchesGo(t, typ, w, xq, rows, cols, m, o0, o1)
			}
		})
	}
}

// TestGEMMKernelsExtremes: the GEMM's integer sums stay exact where every product takes
// its largest magnitude (TestAsmKernelsExtremes' weights and activations, over more than
// one span of columns), and for rows of activations all at the format's limits.
func TestGEMMKernelsExtremes(t *testing.T) {
	if !vec.AcceleratedAVX512() {
		t.Skip("this CPU runs no AVX-512 VNNI kernels")
	}
	for typ, k := range avx512GEMMs {
		t.Run(fmt.Sprint(typ), func(t *testing.T) {
			rows, cols := 3*GroupRows, typ.BlockSize()*(2*k.span+2)
			w, four := extremeRows(t, typ, rows, cols)
			a := ActsFor(typ)
			rb := a.RowBytes(cols)
			xq := append(four, make([]byte, 4*rb)...)
			for i, q := range []int16{splitLimit, -splitLimit, 127, -256} {
				putActsInts(a, xq[(4+i)*rb:], q, cols)
			}
			requireGEMMMatchesGo(t, typ, w, xq, rows, cols, 8, 0, rows)
		})
	}
}

// TestGEMMKernelsRandomScales: the GEMM stays bitwise the Go reference on blocks of random
// bytes (every value, high bit, packed scale and min) whose f16 scales take random finite
// values and the extremes: zero, the largest (±65504), the least normal and the least
// subnormal, of both signs; over rows of activations of small and large magnitudes.
func TestGEMMKernelsRandomScales(t *testing.T) {
	if !vec.AcceleratedAVX512() {
		t.Skip("this CPU runs no AVX-512 VNNI kernels")
	}
	r := rand.New(rand.NewPCG(43, 44))
	extremes := []uint16{0, 0x8000, 0x7bff, 0xfbff, 0x0400, 0x8400, 0x0001, 0x8001}
	for typ, k := range avx512GEMMs {
		t.Run(typ.String(), func(t *testing.T) {
			for range 8 {
				m, rows := 2+r.IntN(63), 2*GroupRows-r.IntN(GroupRows)
				cols := typ.BlockSize() * (1 + r.IntN(2*k.span+2))
				ggml := make([]byte, rows*typ.Bytes(cols))
				for i := range ggml {
					ggml[i] = byte(r.Uint32())
				}
				for b := 0; b < len(ggml); b += typ.BlockBytes() {
					for _, off := range f16Fields[typ] {
						h := extremes[r.IntN(len(extremes))]
						if r.IntN(2) == 0 {
							if h = uint16(r.Uint32()); h&0x7c00 == 0x7c00 {
								h ^= 0x4000 // an infinity or NaN made finite
							}
						}
						binary.LittleEndian.PutUint16(ggml[b+off:], h)
					}
				}
				w := make([]byte, PackedBytes(typ, rows, cols))
				require.NoError(t, Pack(typ, w, ggml, rows, cols))
				a := ActsFor(typ)
				xq := make([]byte, m*a.RowBytes(cols))
				require.NoError(t, QuantizeActs(a, xq, randValues(r, m*cols, []float64{1e-3, 1, 1e3}[r.IntN(3)]), cols))
				requireGEMMMatchesGo(t, typ, w, xq, rows, cols, m, 0, rows)
			}
		})
	}
}

// f16Fields are the offsets of the f16 scales (and mins) in a GGML block of each type.
var f16Fields = map[dtype.DType][]int{
	dtype.Q8_0: {q80D},
	dtype.Q4_0: {q40D},
	dtype.Q5_0: {q50D},
	dtype.Q5_1: {q51D, q51M},
	dtype.Q4_K: {q4KD, q4KDmin},
	dtype.Q5_K: {q4KD, q4KDmin},
	dtype.Q6_K: {q6KD},
}

// TestDotRunsGEMM: on AVX-512 VNNI CPUs Dot runs the GEMM kernel of every quantized type
// for as many rows as a prompt chunk or a batch brings (8, 64), in eight-row tiles where
// the type has them, and the GEMV below the type's threshold: each kernel is swapped for
// one that counts its calls.
func TestDotRunsGEMM(t *testing.T) {
	if !vec.AcceleratedAVX512() {
		t.Skip("this CPU runs no AVX-512 VNNI kernels")
	}
	r := rand.New(rand.NewPCG(45, 46))
	for _, typ := range []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q6_K, dtype.Q5_K, dtype.Q5_0, dtype.Q5_1} {
		k, ok := avx512GEMMs[typ]
		require.True(t, ok, "%v: no GEMM kernel", typ)
		calls, eights := 0, 0
		counted := k
		count := func(kern gemmKernel, n *int) gemmKernel {
			if kern == nil {
				return nil
			}
			return func(y *float32, ystride int, w *byte, nb int, qs, ds, ss *byte, astride int) {
				calls++
				*n++
				kern(y, ystride, w, nb, qs, ds, ss, astride)
			}
		}
		var fours int
		counted.kernel, counted.eight = count(k.kernel, &fours), count(k.eight, &eights)
		avx512GEMMs[typ] = counted
		defer func() { avx512GEMMs[typ] = k }()
		rows, cols := GroupRows, typ.BlockSize()
		w := randRows(t, r, typ, rows, cols)
		a := ActsFor(typ)
		xq := make([]byte, 64*a.RowBytes(cols))
		require.NoError(t, QuantizeActs(a, xq, randValues(r, 64*cols, 1), cols))
		y := make([]float32, 64*rows)
		for _, m := range []int{k.from - 1, 8, 64} {
			calls, eights = 0, 0
			Dot(typ, y, rows, xq, m, w, rows, cols, 0, rows)
			if m < k.from {
				require.Zero(t, calls, "%v, M=%d: Dot ran the GEMM below its threshold %d", typ, m, k.from)
			} else {
				require.Positive(t, calls, "%v, M=%d: Dot ran no GEMM kernel", typ, m)
			}
			if k.eight != nil && m >= gemmRows8 {
				require.Equal(t, m/gemmRows8, eights, "%v, M=%d: Dot's eight-row tiles", typ, m)
			}
		}
	}
}

// BenchmarkGEMMPaths reports GFLOP/s (2·M·out·in per call) of Dot's paths for M rows of
// activations at the medium preset's shapes (QKV 4096×2048, down 2048×5632), on one
// worker: the GEMV kernel once per row ("gemv": what M ≥ 2 ran before the GEMM) and the
// GEMM ("gemm", which runs the GEMV for M % 4 rows, so all of M = 2), and for the types
// with an eight-row kernel the GEMM in fours alone ("gemm4"), side by side in one run. cpuGFLOP/s divides by the process's CPU time instead of the wall clock, which holds
// still where neighbours take the cores away for a while. Compare medians of interleaved
// rounds:
//
//	go test -run '^$' -bench GEMMPaths -count 5 -benchtime 3x ./quant/
func BenchmarkGEMMPaths(b *testing.B) {
	if !vec.AcceleratedAVX512() {
		b.Skip("CPU lacks AVX-512 VNNI: the GEMM does not run")
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, shape := range []struct{ out, in int }{{4096, 2048}, {2048, 5632}} {
		for _, typ := range []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q6_K, dtype.Q5_K, dtype.Q5_0, dtype.Q5_1} {
			ggml := make([]byte, shape.out*typ.Bytes(shape.in))
			require.NoError(b, Quantize(typ, ggml, randValues(r, shape.out*shape.in, 0.02)))
			w := make([]byte, PackedBytes(typ, shape.out, shape.in))
			require.NoError(b, Pack(typ, w, ggml, shape.out, shape.in))
			a := ActsFor(typ)
			for _, m := range []int{2, 4, 8, 16, 32, 128} {
				xq := make([]byte, m*a.RowBytes(shape.in))
				require.NoError(b, QuantizeActs(a, xq, randValues(r, m*shape.in, 1), shape.in))
				y := make([]float32, m*shape.out)
				impls := []struct {
					name string
					fn   func()
				}{
					{"gemv", func() {
						dotGroupsAsm(avx512Groups[typ], typ, y, shape.out, xq, m, w, shape.out, shape.in, 0, shape.out)
					}},
					{"gemm", func() {
						gemmGroupsAsm(avx512GEMMs[typ], avx512Groups[typ], typ, y, shape.out, xq, m, w, shape.out, shape.in, 0, shape.out)
					}},
				}
				if four := avx512GEMMs[typ]; four.eight != nil {
					four.eight = nil
					impls = append(impls, struct {
						name string
						fn   func()
					}{"gemm4", func() {
						gemmGroupsAsm(four, avx512Groups[typ], typ, y, shape.out, xq, m, w, shape.out, shape.in, 0, shape.out)
					}})
				}
				for _, impl := range impls {
					b.Run(fmt.Sprintf("%dx%d/%v/M=%d/impl=%s", shape.out, shape.in, typ, m, impl.name), func(b *testing.B) {
						cpu0 := testutil.CPUSeconds(b)
						for b.Loop() {
							impl.fn()
						}
						flops := 2 * float64(m*shape.out*shape.in) * float64(b.N)
						b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						b.ReportMetric(flops/(testutil.CPUSeconds(b)-cpu0)/1e9, "cpuGFLOP/s")
					})
				}
			}
		}
	}
}

// BenchmarkGEMMTile sets Dot's GEMM (eight-row tiles where a type has them, "gemm")
// against the same GEMM in four-row tiles alone ("gemm4") and against both at half the
// span of columns ("half"), at the medium preset's shapes, interleaved: every iteration
// runs each variant once, and each variant's GFLOP/s comes from its fastest run, so a
// neighbour taking the core for a while lowers none of them; x_gemm4 is gemm4's time over
// gemm's (above 1: the eight-row tile is faster).
//
//	go test -run '^$' -bench GEMMTile -benchtime 40x ./quant/
func BenchmarkGEMMTile(b *testing.B) {
	if !vec.AcceleratedAVX512() {
		b.Skip("CPU lacks AVX-512 VNNI: the GEMM does not run")
	}
	r := rand.New(rand.NewPCG(2, 2))
	for _, shape := range []struct{ out, in int }{{4096, 2048}, {2048, 5632}} {
		for _, typ := range []dtype.DType{dtype.Q4_0} {
			ggml := make([]byte, shape.out*typ.Bytes(shape.in))
			require.NoError(b, Quantize(typ, ggml, randValues(r, shape.out*shape.in, 0.02)))
			w := make([]byte, PackedBytes(typ, shape.out, shape.in))
			require.NoError(b, Pack(typ, w, ggml, shape.out, shape.in))
			a := ActsFor(typ)
			k := avx512GEMMs[typ]
			four, half := k, k
			four.eight = nil
			half.span /= 2
			variants := []gemmType{k, four, half}
			for _, m := range []int{8, 16, 32, 128} {
				xq := make([]byte, m*a.RowBytes(shape.in))
				require.NoError(b, QuantizeActs(a, xq, randValues(r, m*shape.in, 1), shape.in))
				y := make([]float32, m*shape.out)
				b.Run(fmt.Sprintf("%dx%d/%v/M=%d", shape.out, shape.in, typ, m), func(b *testing.B) {
					best := make([]time.Duration, len(variants))
					for i := range best {
						best[i] = time.Duration(math.MaxInt64)
					}
					for b.Loop() {
						for i, v := range variants {
							t0 := time.Now()
							gemmGroupsAsm(v, avx512Groups[typ], typ, y, shape.out, xq, m, w, shape.out, shape.in, 0, shape.out)
							best[i] = min(best[i], time.Since(t0))
						}
					}
					flops := 2 * float64(m*shape.out*shape.in)
					for i, name := range []string{"gemm", "gemm4", "half"} {
						b.ReportMetric(flops/float64(best[i].Nanoseconds()), "GFLOP/s_"+name)
					}
					b.ReportMetric(float64(best[1])/float64(best[0]), "x_gemm4")
				})
			}
		}
	}
}

// BenchmarkGEMMWorkers runs Dot's GEMM at M = 16 and 128 on one worker and on two
// (goroutines splitting the output rows in SplitRows runs, as two SM workers do), and for
// the types with an eight-row kernel the four-row tiles alone on two workers ("two4"),
// interleaved, each from its fastest run: GFLOP/s of all workers together, x_two two
// workers' rate over one's (2 where the cores' vector units are their own) and x_two4 the
// eight-row tiles' rate over the four-row ones' on two workers.
//
//	go test -run '^$' -bench GEMMWorkers -benchtime 40x ./quant/
func BenchmarkGEMMWorkers(b *testing.B) {
	if !vec.AcceleratedAVX512() {
		b.Skip("CPU lacks AVX-512 VNNI: the GEMM does not run")
	}
	r := rand.New(rand.NewPCG(3, 3))
	const out, in = 4096, 2048
	for _, typ := range []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_K} {
		ggml := make([]byte, out*typ.Bytes(in))
		require.NoError(b, Quantize(typ, ggml, randValues(r, out*in, 0.02)))
		w := make([]byte, PackedBytes(typ, out, in))
		require.NoError(b, Pack(typ, w, ggml, out, in))
		a := ActsFor(typ)
		k := avx512GEMMs[typ]
		four := k
		four.eight = nil
		for _, m := range []int{16, 128} {
			xq := make([]byte, m*a.RowBytes(in))
			require.NoError(b, QuantizeActs(a, xq, randValues(r, m*in, 1), in))
			y := make([]float32, m*out)
			b.Run(fmt.Sprintf("%dx%d/%v/M=%d", out, in, typ, m), func(b *testing.B) {
				best := [3]time.Duration{math.MaxInt64, math.MaxInt64, math.MaxInt64}
				units, align := out/SplitRows(typ), SplitRows(typ)
				for b.Loop() {
					for i, run := range []struct {
						workers int
						k       gemmType
					}{{1, k}, {2, k}, {2, four}} {
						t0 := time.Now()
						var wg sync.WaitGroup
						for p := range run.workers {
							wg.Go(func() {
								o0, o1 := units*p/run.workers*align, units*(p+1)/run.workers*align
								gemmGroupsAsm(run.k, avx512Groups[typ], typ, y, out, xq, m, w, out, in, o0, o1)
							})
						}
						wg.Wait()
						best[i] = min(best[i], time.Since(t0))
					}
				}
				flops := 2 * float64(m*out*in)
				b.ReportMetric(flops/float64(best[0].Nanoseconds()), "GFLOP/s_one")
				b.ReportMetric(flops/float64(best[1].Nanoseconds()), "GFLOP/s_two")
				b.ReportMetric(float64(best[0])/float64(best[1]), "x_two")
				if k.eight != nil {
					b.ReportMetric(float64(best[2])/float64(best[1]), "x_two4")
				}
			})
		}
	}
}
