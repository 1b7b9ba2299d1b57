package vec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func sumSquaresRef(x []float32) float32 {
	var p [8]float32
	for i := range x {
		p[i%8] += x[i] * x[i]
	}
	return ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]))
}

func TestRMSNormMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 7, 8, 9, 64, 4096, 4096 + 3} {
		x, w, res := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], w[i], res[i] = float32(rng.NormFloat64()), 1+0.1*float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		require.Equal(t, math.Float32bits(sumSquaresRef(x)), math.Float32bits(SumSquares(x)), "n=%d", n)

		want := make([]float32, n)
		ref := append([]float32(nil), res...)
		for i := range ref {
			ref[i] += x[i]
		}
		var ss float64
		for _, v := range ref {
			ss += float64(v) * float64(v)
		}
		s := RMSScale(ref, 1e-5)
		require.InDelta(t, 1/math.Sqrt(ss/float64(n)+1e-5), float64(s), 1e-6*float64(s), "n=%d", n)
		for i := range want {
			want[i] = ref[i] * s * w[i]
		}
		out := append([]float32(nil), x...) // out aliases x
		AddRMSNorm(out, res, out, w, 1e-5)
		require.Equal(t, ref, res, "residual, n=%d", n)
		require.Equal(t, want, out, "normalized, n=%d", n)
	}
}

func FuzzSumSquares(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, raw []byte) {
		x := make([]float32, len(raw)/4)
		for i := range x {
			x[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
		}
		got, want := SumSquares(x), sumSquaresRef(x)
		if !(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) && math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("SumSquares = %v, reference %v", got, want)
		}
	})
}

// TestRMSNormLongAndUnaligned covers rows longer than one assembly call and rows that start
// off a 32-byte boundary, with guard values around the output.
func TestRMSNormLongAndUnaligned(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, n := range []int{15, 33, 70_001} {
		for _, shift := range []int{0, 1, 3, 7} {
			x, w := make([]float32, n+shift), make([]float32, n+shift)
			for i := range x {
				x[i], w[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			xs, ws := x[shift:], w[shift:]
			require.Equal(t, math.Float32bits(sumSquaresRef(xs)), math.Float32bits(SumSquares(xs)), "n=%d shift=%d", n, shift)
			out := make([]float32, n+2*shift+2)
			const guard = float32(-12345)
			for i := range out {
				out[i] = guard
			}
			dst := out[shift+1 : shift+1+n]
			RMSNorm(dst, xs, ws, 1e-6)
			s := RMSScale(xs, 1e-6)
			for i := range dst {
				require.Equal(t, xs[i]*s*ws[i], dst[i], "n=%d shift=%d i=%d", n, shift, i)
			}
			for i := 0; i < shift+1; i++ {
				require.Equal(t, guard, out[i])
				require.Equal(t, guard, out[len(out)-1-i])
			}
		}
	}
}
