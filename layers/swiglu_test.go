package layers

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSwiGLUMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for _, n := range []int{0, 1, 7, 8, 1000, 14336} {
		gate, up := randF32(r, n, 20), randF32(r, n, 3)
		want := make([]float32, n)
		refSwiGLU(want, gate, up)
		got := make([]float32, n)
		require.NoError(t, SwiGLU(got, gate, up))
		requireBits(t, want, got, "n=%d", n)
		for i := range got { // semantics in float64
			g := float64(gate[i])
			require.InDelta(t, g/(1+math.Exp(-g))*float64(up[i]), got[i], 1e-5*math.Max(1, math.Abs(float64(got[i]))))
		}
		inPlace := slices.Clone(gate)
		require.NoError(t, SwiGLU(inPlace, inPlace, up))
		requireBits(t, want, inPlace, "in place n=%d", n)
	}
}

func TestSwiGLUMerged(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	const tokens, inter = 3, 37
	gateUp := randF32(r, tokens*2*inter, 8)
	got := make([]float32, tokens*inter)
	require.NoError(t, SwiGLUMerged(got, gateUp, inter))
	for tok := range tokens {
		want := make([]float32, inter)
		row := gateUp[tok*2*inter : (tok+1)*2*inter]
		refSwiGLU(want, row[:inter], row[inter:])
		requireBits(t, want, got[tok*inter:(tok+1)*inter], "token %d", tok)
	}
}

func TestSwiGLUSpecialValues(t *testing.T) {
	inf := float32(math.Inf(1))
	out := make([]float32, 5)
	require.NoError(t, SwiGLU(out, []float32{0, 200, -200, inf, -1e-30}, []float32{1, 2, 3, 1, 1}))
	require.Equal(t, float32(0), out[0])
	require.Equal(t, float32(400), out[1])
	require.Equal(t, float32(0), out[2]) // e^200 overflows: −200/inf = −0
	require.Equal(t, inf, out[3])
	require.InDelta(t, -0.5e-30, out[4], 1e-36)
}

func TestSwiGLUErrors(t *testing.T) {
	require.ErrorContains(t, SwiGLU(make([]float32, 3), make([]float32, 3), make([]float32, 2)), "len(out)=3, len(gate)=3, len(up)=2")
	require.ErrorContains(t, SwiGLUMerged(make([]float32, 4), make([]float32, 7), 2), "len(out)=4, len(gateUp)=7, inter=2")
	require.ErrorContains(t, SwiGLUMerged(make([]float32, 4), make([]float32, 8), 3), "inter=3")
	require.ErrorContains(t, SwiGLUMerged(nil, nil, 0), "inter=0")
}

func TestSwiGLUDoesNotAllocate(t *testing.T) {
	g, u, o := make([]float32, 1024), make([]float32, 1024), make([]float32, 512)
	require.Zero(t, testing.AllocsPerRun(10, func() {
		_ = SwiGLU(g, g, u)
		_ = SwiGLUMerged(o, g, 256)
	}))
}

func FuzzSwiGLU(f *testing.F) {
	f.Add(uint16(9), float32(4), uint64(1))
	f.Fuzz(func(t *testing.T, n uint16, scale float32, seed uint64) {
		if !(math.Abs(float64(scale)) < 1e30) {
			scale = 1
		}
		r := rand.New(rand.NewPCG(seed, 75))
		gate, up := randF32(r, int(n%3000), scale), randF32(r, int(n%3000), 1)
		want, got := make([]float32, len(gate)), make([]float32, len(gate))
		refSwiGLU(want, gate, up)
		require.NoError(t, SwiGLU(got, gate, up))
		requireBits(t, want, got)
	})
}
