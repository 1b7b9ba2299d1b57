package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReductionsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 100, 511, 512, 513, 4099} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x, w := randF32(r, n, 3), randF32(r, n, 3)
			requireBits(t, []float32{refDot(x, w)}, []float32{dot(x, w)})
			requireBits(t, []float32{refSum(x)}, []float32{sum(x)})
			y := randF32(r, n, 1)
			want := make([]float32, n)
			for i := range want {
				want[i] = y[i] + float32(0.37*x[i])
			}
			axpy(y, 0.37, x)
			requireBits(t, want, y)
		})
	}
}

func TestDotAccTilesKeepLanes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x, w := randF32(r, 1037, 1), randF32(r, 1037, 1)
	for _, tile := range []int{8, 16, 64, 512} {
		var acc [Lanes]float32
		for k := 0; k < len(x); k += tile {
			e := min(k+tile, len(x))
			dotAcc(&acc, x[k:e], w[k:e])
		}
		require.Equal(t, refDot(x, w), combine8(&acc), "tile %d", tile)
	}
}
