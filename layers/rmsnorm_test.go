package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRMSNormMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		rows, n int
		eps     float32
	}{{1, 1, 1e-5}, {1, 7, 1e-6}, {3, 8, 1e-5}, {2, 9, 0.1}, {5, 4096, 1e-5}, {1, 5120, 1e-6}, {0, 16, 1e-5}} {
		t.Run(fmt.Sprintf("%dx%d", tc.rows, tc.n), func(t *testing.T) {
			x, w := randF32(r, tc.rows*tc.n, 3), randF32(r, tc.n, 1)
			want := make([]float32, len(x))
			refRMSNorm(want, x, w, tc.eps)
			got := make([]float32, len(x))
			require.NoError(t, RMSNorm(got, x, w, tc.eps))
			requireBits(t, want, got)

			inPlace := slices.Clone(x)
			require.NoError(t, RMSNorm(inPlace, inPlace, w, tc.eps))
			requireBits(t, want, inPlace, "in place")

			// Rows are independent: the first row alone gives the same bits.
			if tc.rows > 1 {
				one := make([]float32, tc.n)
				require.NoError(t, RMSNorm(one, x[:tc.n], w, tc.eps))
				requireBits(t, want[:tc.n], one, "one row")
			}
		})
	}
}

// TestRMSNormSemantics checks the result against the formula in float64.
func TestRMSNormSemantics(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	x, w := randF32(r, 2*1000, 5), randF32(r, 1000, 2)
	got := make([]float32, len(x))
	require.NoError(t, RMSNorm(got, x, w, 1e-5))
	for row := range 2 {
		ss := 0.0
		for _, v := range x[row*1000 : (row+1)*1000] {
			ss += float64(v) * float64(v)
		}
		rs := 1 / math.Sqrt(ss/1000+1e-5)
		for i := range 1000 {
			want := float64(x[row*1000+i]) * rs * float64(w[i])
			require.InDelta(t, want, got[row*1000+i], 1e-5*math.Max(1, math.Abs(want)))
		}
	}
}

func TestRMSNormResidual(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	const rows, n = 3, 1001
	x, res, w := randF32(r, rows*n, 1), randF32(r, rows*n, 4), randF32(r, n, 1)
	wantRes := slices.Clone(res)
	for i := range wantRes {
		wantRes[i] += x[i]
	}
	want := make([]float32, len(x))
	refRMSNorm(want, wantRes, w, 1e-6)

	for _, alias := range []string{"none", "out=x", "out=res"} {
		t.Run(alias, func(t *testing.T) {
			xx, rr := slices.Clone(x), slices.Clone(res)
			out := make([]float32, len(x))
			switch alias {
			case "out=x":
				out = xx
			case "out=res":
				out = rr
			}
			require.NoError(t, RMSNormResidual(out, rr, xx, w, 1e-6))
			requireBits(t, want, out)
			if alias != "out=res" {
				requireBits(t, wantRes, rr, "residual")
			}
		})
	}
}

func TestRMSNormErrors(t *testing.T) {
	for _, tc := range []struct {
		name          string
		out, x, w, rs int
		eps           float32
		want          string
	}{
		{"empty weight", 4, 4, 0, 4, 1e-5, "empty weight"},
		{"x not rows", 10, 10, 4, 10, 1e-5, "len(x)=10 is not a multiple of the hidden size len(w)=4"},
		{"out short", 7, 8, 4, 8, 1e-5, "len(out)=7, len(x)=8"},
		{"negative eps", 8, 8, 4, 8, -1, "eps=-1 must be finite and non-negative"},
		{"NaN eps", 8, 8, 4, 8, float32(math.NaN()), "eps=NaN"},
		{"residual short", 8, 8, 4, 4, 1e-5, "len(res)=4, len(x)=8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, x, w, res := make([]float32, tc.out), make([]float32, tc.x), make([]float32, tc.w), make([]float32, tc.rs)
			err := RMSNormResidual(out, res, x, w, tc.eps)
			require.ErrorContains(t, err, tc.want)
			if tc.rs == tc.x {
				require.ErrorContains(t, RMSNorm(out, x, w, tc.eps), tc.want)
			}
		})
	}
}

func TestRMSNormDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	x, res, w := randF32(r, 4*512, 1), randF32(r, 4*512, 1), randF32(r, 512, 1)
	out := make([]float32, len(x))
	require.Zero(t, testing.AllocsPerRun(10, func() {
		_ = RMSNorm(out, x, w, 1e-5)
		_ = RMSNormResidual(out, res, x, w, 1e-5)
	}))
}

func FuzzRMSNorm(f *testing.F) {
	f.Add(uint8(1), uint16(8), float32(1e-5), uint64(1))
	f.Add(uint8(3), uint16(4097), float32(0.5), uint64(2))
	f.Fuzz(func(t *testing.T, rows uint8, n uint16, eps float32, seed uint64) {
		R, N := int(rows%6), int(n%5000)+1
		if !(eps >= 0) || math.IsInf(float64(eps), 1) {
			eps = 1e-6
		}
		r := rand.New(rand.NewPCG(seed, 29))
		x, w := randF32(r, R*N, 10), randF32(r, N, 1)
		want, got := make([]float32, len(x)), make([]float32, len(x))
		refRMSNorm(want, x, w, eps)
		require.NoError(t, RMSNorm(got, x, w, eps))
		requireBits(t, want, got)
	})
}
