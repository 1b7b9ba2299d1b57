package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// bf16DotCase draws bf16 weights [out, in] and activations [m, in] rounded by RoundBF16,
// magnitudes near a transformer's (weights ~0.05, activations ~1).
func bf16DotCase(r *rand.Rand, m, in, out int) (Matrix, []uint16) {
	wb := make([]uint16, out*in)
	for i := range wb {
		wb[i] = dtype.F32ToBF16(float32(r.NormFloat64() * 0.05))
	}
	x := make([]float32, m*in)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	xb := make([]uint16, m*in)
	if err := RoundBF16(xb, x); err != nil {
		panic(err)
	}
	return Matrix16(dtype.BF16, out, in, wb), xb
}

// bf16DotKernel is one instruction set's LinearBF16DotRows after validation, which the
// differential tests force whatever the CPU would pick.
type bf16DotKernel struct {
	name string
	run  func(y []float32, xb []uint16, w Matrix, m, o0, o1 int)
}

// checkBF16Dot runs LinearBF16DotRows on [o0, o1) of every shape's M rows and requires
// every output bitwise the reference loop's, every row bitwise its own GEMV (M = 1), and
// the columns outside [o0, o1) untouched; then the same of every kernel of
// isaBF16DotKernels that this CPU runs.
func checkBF16Dot(t *testing.T, w Matrix, xb []uint16, m, o0, o1 int) {
	checkBF16DotKernel(t, bf16DotKernel{"LinearBF16DotRows", func(y []float32, xb []uint16, w Matrix, _, o0, o1 int) {
		require.NoError(t, LinearBF16DotRows(y, xb, w, o0, o1))
	}}, w, xb, m, o0, o1)
	for _, k := range isaBF16DotKernels() {
		checkBF16DotKernel(t, k, w, xb, m, o0, o1)
	}
}

func checkBF16DotKernel(t *testing.T, k bf16DotKernel, w Matrix, xb []uint16, m, o0, o1 int) {
	in, out := w.Cols, w.Rows
	const untouched = float32(-7.5)
	y := make([]float32, m*out)
	for i := range y {
		y[i] = untouched
	}
	k.run(y, xb, w, m, o0, o1)
	want := make([]float32, m*out)
	linearBF16DotGo(want, xb, w, m, 0, out)
	gemv := make([]float32, out)
	for mi := range m {
		k.run(gemv, xb[mi*in:(mi+1)*in], w, 1, o0, o1)
		for o := range out {
			got := y[mi*out+o]
			if o < o0 || o >= o1 {
				require.Equal(t, untouched, got, "%s m=%d in=%d out=%d [%d,%d): row %d col %d written", k.name, m, in, out, o0, o1, mi, o)
				continue
			}
			require.Equal(t, math.Float32bits(want[mi*out+o]), math.Float32bits(got),
				"%s m=%d in=%d out=%d [%d,%d): row %d col %d against the reference", k.name, m, in, out, o0, o1, mi, o)
			require.Equal(t, math.Float32bits(gemv[o]), math.Float32bits(got),
				"%s m=%d in=%d out=%d [%d,%d): row %d col %d against its GEMV", k.name, m, in, out, o0, o1, mi, o)
		}
	}
}

// TestLinearBF16DotMatchesReference covers rows 1..64 (every blocking of 4 and the 1-row
// remainder), odd and short columns (the masked last step), partial groups of output rows
// and sub-ranges of them.
func TestLinearBF16DotMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range []struct{ m, in, out, o0, o1 int }{
		{1, 64, 8, 0, 8}, {2, 33, 5, 0, 5}, {3, 1, 7, 1, 6}, {4, 31, 4, 0, 4},
		{5, 95, 13, 2, 11}, {7, 256, 12, 0, 12}, {8, 97, 6, 3, 6}, {13, 160, 9, 0, 9},
		{33, 257, 10, 1, 10}, {64, 1024, 17, 0, 17}, {64, 63, 3, 0, 3}, {70, 96, 6, 0, 5},
	} {
		w, xb := bf16DotCase(r, s.m, s.in, s.out)
		checkBF16Dot(t, w, xb, s.m, s.o0, s.o1)
	}
}

// FuzzLinearBF16Dot draws the shape: rows 1..64, columns 1..600, outputs 1..20 and a
// sub-range of them.
func FuzzLinearBF16Dot(f *testing.F) {
	f.Add(uint8(2), uint16(33), uint8(5), uint8(0), uint8(5), uint64(1))
	f.Add(uint8(64), uint16(97), uint8(9), uint8(1), uint8(8), uint64(2))
	f.Fuzz(func(t *testing.T, m uint8, in uint16, out, o0, o1 uint8, seed uint64) {
		mm, ii, oo := 1+int(m)%64, 1+int(in)%600, 1+int(out)%20
		a, b := int(o0)%(oo+1), int(o1)%(oo+1)
		if a > b {
			a, b = b, a
		}
		w, xb := bf16DotCase(rand.New(rand.NewPCG(seed, 7)), mm, ii, oo)
		checkBF16Dot(t, w, xb, mm, a, b)
	})
}

// TestRoundBF16Slice checks RoundBF16 element by element against roundBF16 over lengths
// that leave every remainder of 16, and its error on a short dst.
func TestRoundBF16Slice(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for n := range 70 {
		x := make([]float32, n)
		for i := range x {
			x[i] = math.Float32frombits(r.Uint32())
		}
		dst := make([]uint16, n)
		require.NoError(t, RoundBF16(dst, x))
		for i, v := range x {
			require.Equal(t, roundBF16(v), dst[i], "n=%d i=%d", n, i)
		}
	}
	require.ErrorContains(t, RoundBF16(make([]uint16, 3), make([]float32, 4)), "len(dst)=3")
}

// TestLinearBF16DotErrors checks that bad arguments are named.
func TestLinearBF16DotErrors(t *testing.T) {
	w, xb := bf16DotCase(rand.New(rand.NewPCG(1, 1)), 2, 8, 4)
	require.ErrorContains(t, LinearBF16DotRows(make([]float32, 7), xb, w, 0, 4), "not a multiple of out=4")
	require.ErrorContains(t, LinearBF16DotRows(make([]float32, 8), xb[:15], w, 0, 4), "len(xb)=15")
	require.ErrorContains(t, LinearBF16DotRows(make([]float32, 8), xb, w, 2, 5), "[2, 5)")
	f := F32Matrix(4, 8, make([]float32, 32))
	require.ErrorContains(t, LinearBF16DotRows(make([]float32, 8), xb, f, 0, 4), "want bf16")
}
