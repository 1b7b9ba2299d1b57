//go:build amd64 && !noasm

package layers

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/vec"
)

// hardwareFMA32 computes fma32 of 32 operand triples with the CPU's VFMADD231PS, through
// the AVX2 f32 GEMV kernel: 4 weight rows of 8 elements, one row of x, the partial sums
// preloaded with c, so that lane l of row r becomes x[l]·w_r[l] + c[r][l].
func hardwareFMA32(a, b, c *[linearRowBlock][Lanes]float32) [linearRowBlock][Lanes]float32 {
	acc := *c
	for r := range linearRowBlock {
		x := a[r]
		off := [linearRowBlock]int{r * Lanes, r * Lanes, r * Lanes, r * Lanes}
		var one [linearRowBlock][Lanes]float32
		one[0] = acc[r]
		linear4F32AVX2(&one, &x[0], 0, 1, unsafe.Pointer(&b[0][0]), &off, Lanes)
		acc[r] = one[0]
	}
	return acc
}

// TestFMA32MatchesVFMADD checks fma32 against the hardware's fused multiply-add on the tie
// cases, the special operands and random bit patterns, so that the Go reference, the exact
// oracle and the kernels agree on one rounding.
func TestFMA32MatchesVFMADD(t *testing.T) {
	if !vec.Accelerated() {
		t.Skip("CPU lacks AVX2/F16C/FMA: the assembly does not run")
	}
	var triples [][3]float32
	triples = append(triples, fmaTies()...)
	for _, a := range fmaSpecials {
		for _, b := range fmaSpecials {
			for _, c := range fmaSpecials {
				triples = append(triples, [3]float32{a, b, c})
			}
		}
	}
	r := rand.New(rand.NewPCG(28, 2))
	for range 100000 {
		triples = append(triples, [3]float32{math.Float32frombits(r.Uint32()), math.Float32frombits(r.Uint32()), math.Float32frombits(r.Uint32())})
	}
	const batch = linearRowBlock * Lanes
	for k := 0; k < len(triples); k += batch {
		var a, b, c [linearRowBlock][Lanes]float32
		for i := range batch {
			abc := triples[(k+i)%len(triples)]
			a[i/Lanes][i%Lanes], b[i/Lanes][i%Lanes], c[i/Lanes][i%Lanes] = abc[0], abc[1], abc[2]
		}
		got := hardwareFMA32(&a, &b, &c)
		for i := range batch {
			x, w, s := a[i/Lanes][i%Lanes], b[i/Lanes][i%Lanes], c[i/Lanes][i%Lanes]
			want, hw := fma32(x, w, s), got[i/Lanes][i%Lanes]
			if math.IsNaN(float64(want)) && math.IsNaN(float64(hw)) {
				continue
			}
			require.Equalf(t, math.Float32bits(hw), math.Float32bits(want), "fma32(%#08x, %#08x, %#08x) = %v, VFMADD231PS %v",
				math.Float32bits(x), math.Float32bits(w), math.Float32bits(s), want, hw)
		}
	}
}
