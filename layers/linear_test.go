package layers

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

func TestLinearMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dt := range dtypes {
		for _, tc := range []struct{ m, in, out int }{
			{1, 1, 1}, {1, 7, 3}, {1, 8, 4}, {1, 9, 5}, {2, 512, 9}, {1, 513, 6},
			{3, 1030, 7}, {5, 64, 64}, {64, 40, 5}, {65, 24, 3}, {130, 17, 2}, {0, 16, 4},
		} {
			t.Run(fmt.Sprintf("%v/m%d_in%d_out%d", dt, tc.m, tc.in, tc.out), func(t *testing.T) {
				w := randMatrix(r, dt, tc.out, tc.in)
				x := randF32(r, tc.m*tc.in, 2)
				want := make([]float32, tc.m*tc.out)
				refLinear(want, x, w, 0, tc.out)
				got := make([]float32, len(want))
				require.NoError(t, Linear(got, x, w))
				requireBits(t, want, got)
			})
		}
	}
}

// TestLinearBatchInvariant checks that a GEMM row is bitwise the GEMV of that row, and
// that any split of the output rows over concurrent workers gives the same bits.
func TestLinearBatchInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const m, in, out = 70, 1100, 37
	for _, dt := range dtypes {
		t.Run(dt.String(), func(t *testing.T) {
			w := randMatrix(r, dt, out, in)
			x := randF32(r, m*in, 1)
			gemm := make([]float32, m*out)
			require.NoError(t, Linear(gemm, x, w))
			for row := range m {
				gemv := make([]float32, out)
				require.NoError(t, Linear(gemv, x[row*in:(row+1)*in], w))
				requireBits(t, gemm[row*out:(row+1)*out], gemv, "row %d", row)
			}
			for _, workers := range []int{2, 3, 8, out} {
				split := make([]float32, m*out)
				var wg sync.WaitGroup
				errs := make([]error, workers)
				for k := range workers {
					o0, o1 := k*out/workers, (k+1)*out/workers
					wg.Go(func() { errs[k] = LinearRows(split, x, w, o0, o1) })
				}
				wg.Wait()
				for _, err := range errs {
					require.NoError(t, err)
				}
				requireBits(t, gemm, split, "%d workers", workers)
			}
		})
	}
}

func TestLinearRowsWritesOnlyItsColumns(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	w := randMatrix(r, dtype.BF16, 10, 20)
	x := randF32(r, 3*20, 1)
	y := make([]float32, 3*10)
	for i := range y {
		y[i] = -7
	}
	require.NoError(t, LinearRows(y, x, w, 3, 6))
	want := make([]float32, 30)
	refLinear(want, x, w, 0, 10)
	for m := range 3 {
		for o := range 10 {
			if o >= 3 && o < 6 {
				require.Equal(t, want[m*10+o], y[m*10+o])
			} else {
				require.Equal(t, float32(-7), y[m*10+o], "row %d col %d", m, o)
			}
		}
	}
}

func TestLinearErrors(t *testing.T) {
	good := F32Matrix(4, 8, make([]float32, 32))
	for _, tc := range []struct {
		name   string
		y, x   int
		w      Matrix
		o0, o1 int
		want   string
	}{
		{"x not a multiple of in", 8, 12, good, 0, 4, "len(x)=12 is not a multiple of in=8"},
		{"y wrong", 7, 16, good, 0, 4, "len(y)=7, want M·out = 2·4 = 8"},
		{"rows outside", 8, 16, good, 2, 5, "output rows [2, 5) not within [0, 4)"},
		{"rows reversed", 8, 16, good, 3, 2, "output rows [3, 2)"},
		{"negative row", 8, 16, good, -1, 2, "output rows [-1, 2)"},
		{"short weights", 8, 16, F32Matrix(4, 8, make([]float32, 31)), 0, 4, "f32 matrix [4, 8] needs 128 bytes, has 124"},
		{"16-bit with f32 bytes", 8, 16, Matrix{DType: dtype.BF16, Rows: 4, Cols: 8, Data: make([]byte, 128)}, 0, 4, "bf16 matrix [4, 8] needs 64 bytes, has 128"},
		{"bad dtype", 8, 16, Matrix{Rows: 4, Cols: 8}, 0, 4, "invalid dtype"},
		{"zero in", 0, 0, F32Matrix(4, 0, nil), 0, 4, "matrix [4, 0]: sizes must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := LinearRows(make([]float32, tc.y), make([]float32, tc.x), tc.w, tc.o0, tc.o1)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestLinearDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, dt := range dtypes {
		w := randMatrix(r, dt, 16, 600)
		for _, m := range []int{1, 3, 64, 70} {
			x := randF32(r, m*600, 1)
			y := make([]float32, m*16)
			allocs := testing.AllocsPerRun(10, func() {
				if err := LinearRows(y, x, w, 1, 13); err != nil {
					panic(err)
				}
			})
			require.Zero(t, allocs, "%v M=%d", dt, m)
		}
	}
}

func FuzzLinear(f *testing.F) {
	f.Add(uint8(1), uint16(8), uint8(4), uint8(0), uint64(1))
	f.Add(uint8(3), uint16(513), uint8(9), uint8(1), uint64(2))
	f.Add(uint8(66), uint16(17), uint8(5), uint8(2), uint64(3))
	f.Fuzz(func(t *testing.T, m uint8, in uint16, out uint8, dt uint8, seed uint64) {
		M, In, Out := int(m%80), int(in%1100)+1, int(out%12)+1
		r := rand.New(rand.NewPCG(seed, 13))
		w := randMatrix(r, dtypes[int(dt)%len(dtypes)], Out, In)
		x := randF32(r, M*In, 4)
		o0 := r.IntN(Out + 1)
		o1 := o0 + r.IntN(Out-o0+1)
		want := make([]float32, M*Out)
		refLinear(want, x, w, o0, o1)
		got := make([]float32, M*Out)
		require.NoError(t, LinearRows(got, x, w, o0, o1))
		requireBits(t, want, got)
	})
}
