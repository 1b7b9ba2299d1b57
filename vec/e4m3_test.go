package vec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// quantizeE4M3Ref is QuantizeE4M3's doc-comment loop, one value at a time.
func quantizeE4M3Ref(src []float32) (codes []uint8, scales []float32) {
	codes = make([]uint8, len(src))
	for k := 0; k*E4M3Block < len(src); k++ {
		lo, hi := k*E4M3Block, min(len(src), (k+1)*E4M3Block)
		amax := 0.0
		for _, v := range src[lo:hi] {
			if a := math.Abs(float64(v)); !math.IsInf(a, 0) && a > amax {
				amax = a
			}
		}
		s := float32(amax) / 448
		scales = append(scales, s)
		for i := lo; i < hi; i++ {
			v := float64(src[i])
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				codes[i] = 0x7f
				if math.Signbit(v) {
					codes[i] = 0xff
				}
			case s != 0:
				codes[i] = dtype.F32ToE4M3(src[i] / s)
			}
		}
	}
	return codes, scales
}

// e4m3Input draws n values of one of several shapes: standard normal, a few outliers over
// a small bulk (activations), all zero, tiny (f32 subnormal scales), huge.
func e4m3Input(rng *rand.Rand, n, shape int) []float32 {
	x := make([]float32, n)
	for i := range x {
		v := rng.NormFloat64()
		switch shape {
		case 1:
			if rng.IntN(50) == 0 {
				v *= 100
			}
		case 2:
			v = 0
		case 3:
			v *= 1e-39
		case 4:
			v *= 1e37
		}
		x[i] = float32(v)
	}
	return x
}

func TestQuantizeE4M3MatchesTheReferenceLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range append(lengths, 31, 32, 33, 64, 95, 96, 97, 4096+17) {
		for shape := range 5 {
			src := e4m3Input(rng, n, shape)
			if n > 3 && shape == 0 {
				src[1], src[n-2] = float32(math.Inf(-1)), float32(math.NaN())
			}
			codes, scales := make([]uint8, n), make([]float32, E4M3Scales(n))
			QuantizeE4M3(codes, scales, src)
			wantC, wantS := quantizeE4M3Ref(src)
			require.Equal(t, wantC, codes, "n=%d shape %d", n, shape)
			require.Equal(t, len(wantS), len(scales))
			for k := range scales {
				require.Equal(t, math.Float32bits(wantS[k]), math.Float32bits(scales[k]), "n=%d shape %d scale %d", n, shape, k)
			}
		}
	}
}

// TestQuantizeE4M3Error checks the bound QuantizeE4M3 states: every finite value decodes
// within 2^-4 of its block's amax; non-finite values decode as NaN, the block's others
// stay accurate.
func TestQuantizeE4M3Error(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for shape := range 5 {
		src := e4m3Input(rng, 1000+7, shape)
		src[40] = float32(math.Inf(1))
		codes, scales := make([]uint8, len(src)), make([]float32, E4M3Scales(len(src)))
		QuantizeE4M3(codes, scales, src)
		for i, v := range src {
			got := float64(dtype.E4M3ToF32(codes[i])) * float64(scales[i/E4M3Block])
			if math.IsInf(float64(v), 0) {
				require.True(t, math.IsNaN(got), "element %d: %v decodes as NaN", i, v)
				continue
			}
			amax := float64(scales[i/E4M3Block]) * 448
			require.LessOrEqual(t, math.Abs(got-float64(v)), 0x1p-4*amax*(1+0x1p-20)+0x1p-149,
				"shape %d element %d: %g decodes as %g, block amax %g", shape, i, v, got, amax)
		}
	}
}

// TestSumE4M3MatchesTheReferenceLoop sums 1 to 8 quantized sources against the doc
// comment's loop, bit for bit.
func TestSumE4M3MatchesTheReferenceLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range append(lengths, 95, 96, 97) {
		for srcs := 1; srcs <= 8; srcs++ {
			codes, scales := make([][]uint8, srcs), make([][]float32, srcs)
			for k := range srcs {
				codes[k], scales[k] = quantizeE4M3Ref(e4m3Input(rng, n, k%5))
			}
			dst, check := guardedF32(t, n, n%maxOff)
			SumE4M3(dst, codes, scales)
			check()
			for i := range n {
				acc := dtype.E4M3ToF32(codes[0][i]) * scales[0][i/E4M3Block]
				for k := 1; k < srcs; k++ {
					p := dtype.E4M3ToF32(codes[k][i]) * scales[k][i/E4M3Block]
					acc += p
				}
				require.Equal(t, math.Float32bits(acc), math.Float32bits(dst[i]), "n=%d srcs=%d element %d", n, srcs, i)
			}
		}
	}
}

func BenchmarkE4M3(b *testing.B) {
	const n = 1 << 16
	src := e4m3Input(rand.New(rand.NewPCG(1, 1)), n, 0)
	codes, scales := make([]uint8, n), make([]float32, E4M3Scales(n))
	b.Run("quantize", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			QuantizeE4M3(codes, scales, src)
		}
	})
	dst := make([]float32, n)
	b.Run("sum8", func(b *testing.B) {
		cs, ss := make([][]uint8, 8), make([][]float32, 8)
		for k := range cs {
			cs[k], ss[k] = codes, scales
		}
		b.SetBytes(8 * n)
		for b.Loop() {
			SumE4M3(dst, cs, ss)
		}
	})
	b.Run("narrow-bf16", func(b *testing.B) { // the bf16 wire's encoder, for comparison
		u := make([]uint16, n)
		b.SetBytes(4 * n)
		for b.Loop() {
			Narrow(dtype.BF16, u, src)
		}
	})
}
