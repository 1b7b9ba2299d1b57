package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/dtype"
)

// Each kernel is checked twice per case: through the exported function (the assembly
// where the CPU allows it) and through its portable Go implementation.

var addImpls = []struct {
	name string
	fn   func(dst, src []float32)
}{{"AddF32", AddF32}, {"addF32Go", addF32Go}}

var widenImpls = []struct {
	name string
	fn   func(dtype.DType, []float32, []uint16)
}{{"Widen", Widen}, {"widenGo", widenGo}}

var narrowImpls = []struct {
	name string
	fn   func(dtype.DType, []uint16, []float32)
}{{"Narrow", Narrow}, {"narrowGo", narrowGo}}

var sumF32Impls = []struct {
	name string
	fn   func([]float32, [][]float32)
}{{"SumF32", SumF32}, {"sumF32Go", sumF32Go}}

var sum16Impls = []struct {
	name string
	fn   func(dtype.DType, []uint16, [][]uint16)
}{{"Sum16", Sum16}, {"sum16Go", sum16Go}}

var sum16ToF32Impls = []struct {
	name string
	fn   func(dtype.DType, []float32, [][]uint16)
}{{"Sum16ToF32", Sum16ToF32}, {"sum16ToF32Go", sum16ToF32Go}}

// checkAdd runs every AddF32 implementation on a guarded copy of dst0 (starting off
// elements into its buffer) and src (at another offset) and compares with refAddF32.
func checkAdd(t testing.TB, dst0, src []float32, off int) {
	t.Helper()
	want := slices.Clone(dst0)
	refAddF32(want, src)
	inputs := [][]float32{dst0, src}
	src = offsetF32(src, (off+3)%(maxOff+1))
	src0 := slices.Clone(src)
	for _, impl := range addImpls {
		dst, check := guardedF32(t, len(dst0), off)
		copy(dst, dst0)
		impl.fn(dst, src)
		what := fmt.Sprintf("%s n=%d off=%d", impl.name, len(dst0), off)
		requireSumF32(t, what, want, dst, inputs)
		requireBitsF32(t, src0, src, what+" (src)")
		check()
	}
}

// checkWiden compares every Widen implementation with refWiden on src.
func checkWiden(t testing.TB, typ dtype.DType, src []uint16, off int) {
	t.Helper()
	want := make([]float32, len(src))
	refWiden(typ, want, src)
	src = offset16(src, (off+5)%(maxOff+1))
	for _, impl := range widenImpls {
		dst, check := guardedF32(t, len(want), off)
		impl.fn(typ, dst, src)
		requireBitsF32(t, want, dst, fmt.Sprintf("%s %v n=%d off=%d", impl.name, typ, len(want), off))
		check()
	}
}

// checkNarrow compares every Narrow implementation with refNarrow on src.
func checkNarrow(t testing.TB, typ dtype.DType, src []float32, off int) {
	t.Helper()
	want := make([]uint16, len(src))
	refNarrow(typ, want, src)
	src = offsetF32(src, (off+5)%(maxOff+1))
	for _, impl := range narrowImpls {
		dst, check := guarded16(t, len(want), off)
		impl.fn(typ, dst, src)
		requireBits16(t, want, dst, fmt.Sprintf("%s %v n=%d off=%d", impl.name, typ, len(want), off))
		check()
	}
}

// checkSumF32 compares every SumF32 implementation with refSumF32. All srcs have the length
// of the destination; source k starts at offset off+k. If alias ≥ 0 the destination is
// srcs[alias] itself (a guarded copy of it).
func checkSumF32(t testing.TB, srcs [][]float32, off, alias int) {
	t.Helper()
	n := len(srcs[0])
	want := make([]float32, n)
	refSumF32(want, srcs)
	for _, impl := range sumF32Impls {
		in := make([][]float32, len(srcs))
		for k, s := range srcs {
			in[k] = offsetF32(s, (off+k)%(maxOff+1))
		}
		dst, check := guardedF32(t, n, off)
		if alias >= 0 {
			copy(dst, in[alias])
			in[alias] = dst
		}
		impl.fn(dst, in)
		what := fmt.Sprintf("%s n=%d nsrc=%d off=%d alias=%d", impl.name, n, len(srcs), off, alias)
		requireSumF32(t, what, want, dst, srcs)
		for k := range in {
			if k != alias {
				requireBitsF32(t, srcs[k], in[k], fmt.Sprintf("%s (src %d)", what, k))
			}
		}
		check()
	}
}

// checkSum16 is checkSumF32 for Sum16.
func checkSum16(t testing.TB, typ dtype.DType, srcs [][]uint16, off, alias int) {
	t.Helper()
	n := len(srcs[0])
	want := make([]uint16, n)
	refSum16(typ, want, srcs)
	for _, impl := range sum16Impls {
		in := make([][]uint16, len(srcs))
		for k, s := range srcs {
			in[k] = offset16(s, (off+k)%(maxOff+1))
		}
		dst, check := guarded16(t, n, off)
		if alias >= 0 {
			copy(dst, in[alias])
			in[alias] = dst
		}
		impl.fn(typ, dst, in)
		what := fmt.Sprintf("%s %v n=%d nsrc=%d off=%d alias=%d", impl.name, typ, n, len(srcs), off, alias)
		requireSum16(t, what, typ, widen32(want), widen32(dst), srcs, false)
		for k := range in {
			if k != alias {
				requireBits16(t, srcs[k], in[k], fmt.Sprintf("%s (src %d)", what, k))
			}
		}
		check()
	}
}

// checkSum16ToF32 is checkSumF32 for Sum16ToF32 (no aliasing: the element types differ).
func checkSum16ToF32(t testing.TB, typ dtype.DType, srcs [][]uint16, off int) {
	t.Helper()
	n := len(srcs[0])
	want := make([]float32, n)
	refSum16ToF32(typ, want, srcs)
	for _, impl := range sum16ToF32Impls {
		in := make([][]uint16, len(srcs))
		for k, s := range srcs {
			in[k] = offset16(s, (off+k)%(maxOff+1))
		}
		dst, check := guardedF32(t, n, off)
		impl.fn(typ, dst, in)
		requireSum16(t, fmt.Sprintf("%s %v n=%d nsrc=%d off=%d", impl.name, typ, n, len(srcs), off), typ, bitsOf(want), bitsOf(dst), srcs, true)
		check()
	}
}

func TestAddF32(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range lengths {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for off := 0; off <= maxOff; off++ {
				checkAdd(t, randSliceF32(r, n), randSliceF32(r, n), off)
			}
		})
	}
	t.Run("specials", func(t *testing.T) {
		// Every ordered pair of specials, so NaN+NaN payload choice is covered too.
		var a, b []float32
		for _, x := range specialF32 {
			for _, y := range specialF32 {
				a = append(a, math.Float32frombits(x))
				b = append(b, math.Float32frombits(y))
			}
		}
		checkAdd(t, a, b, 0)
		checkAdd(t, a[3:], b[3:], 1)
	})
	t.Run("src longer than dst", func(t *testing.T) {
		dst, src := randSliceF32(r, 33), randSliceF32(r, 40)
		want := slices.Clone(dst)
		refAddF32(want, src)
		AddF32(dst, src)
		requireBitsF32(t, want, dst, "AddF32")
	})
	t.Run("src shorter than dst panics", func(t *testing.T) {
		require.Panics(t, func() { AddF32(make([]float32, 9), make([]float32, 8)) })
	})
}

func TestWidenAll16BitPatterns(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	for _, typ := range dtypes16 {
		t.Run(typ.String(), func(t *testing.T) {
			checkWiden(t, typ, all, 0)
			checkWiden(t, typ, all[1:], 3)
		})
	}
}

func TestWiden(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, typ := range dtypes16 {
		for _, n := range lengths {
			t.Run(fmt.Sprintf("%v/%d", typ, n), func(t *testing.T) {
				for off := 0; off <= maxOff; off++ {
					checkWiden(t, typ, randSlice16(r, typ, n), off)
				}
			})
		}
	}
	t.Run("src shorter than dst panics", func(t *testing.T) {
		require.Panics(t, func() { Widen(dtype.BF16, make([]float32, 9), make([]uint16, 8)) })
	})
}

// narrowInputs returns the special values, every f32 exponent/sign/high-mantissa pattern
// combined with the low-bit patterns that decide the rounding of both bf16 (16 dropped
// bits) and f16 (13 dropped bits in the normal range), and random bit patterns.
func narrowInputs(r *rand.Rand) []float32 {
	var s []float32
	for _, u := range specialF32 {
		s = append(s, math.Float32frombits(u))
	}
	lows := []uint32{0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0xb000, 0xffff}
	for hi := range uint32(1 << 16) {
		for _, lo := range lows {
			s = append(s, math.Float32frombits(hi<<16|lo))
		}
	}
	// f16 subnormal results: k·2⁻²⁴ and the ties (2k+1)·2⁻²⁵ between them, both signs.
	for k := range 1 << 11 {
		for _, v := range []float64{math.Ldexp(float64(k), -24), math.Ldexp(float64(2*k+1), -25)} {
			s = append(s, float32(v), float32(-v), math.Nextafter32(float32(v), 1), math.Nextafter32(float32(v), 0))
		}
	}
	for range 1 << 18 {
		s = append(s, math.Float32frombits(r.Uint32()))
	}
	return s
}

func TestNarrow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	inputs := narrowInputs(r)
	for _, typ := range dtypes16 {
		t.Run(typ.String()+"/specials+sweep+random", func(t *testing.T) {
			checkNarrow(t, typ, inputs, 0)
			checkNarrow(t, typ, inputs[5:], 6)
		})
		for _, n := range lengths {
			t.Run(fmt.Sprintf("%v/%d", typ, n), func(t *testing.T) {
				for off := 0; off <= maxOff; off++ {
					checkNarrow(t, typ, randSliceF32(r, n), off)
				}
			})
		}
	}
	t.Run("src shorter than dst panics", func(t *testing.T) {
		require.Panics(t, func() { Narrow(dtype.F16, make([]uint16, 9), make([]float32, 8)) })
	})
}

// sumLengths adds to lengths one that spans several assembly chunks with a ragged tail.
var sumLengths = append(slices.Clone(lengths), 3<<14+37)

func TestSumF32(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, nsrc := range []int{1, 2, 3, 8} {
		for _, n := range sumLengths {
			t.Run(fmt.Sprintf("nsrc=%d/%d", nsrc, n), func(t *testing.T) {
				for off := 0; off <= maxOff; off++ {
					srcs := make([][]float32, nsrc)
					for k := range srcs {
						srcs[k] = randSliceF32(r, n)
					}
					checkSumF32(t, srcs, off, off%(nsrc+1)-1)
				}
			})
		}
	}
	t.Run("srcs longer than dst", func(t *testing.T) {
		srcs := [][]float32{randSliceF32(r, 40), randSliceF32(r, 50)}
		want, got := make([]float32, 35), make([]float32, 35)
		refSumF32(want, srcs)
		SumF32(got, srcs)
		requireBitsF32(t, want, got, "SumF32")
	})
	t.Run("short src panics", func(t *testing.T) {
		require.Panics(t, func() { SumF32(make([]float32, 64), [][]float32{make([]float32, 64), make([]float32, 63)}) })
	})
}

func TestSum16(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, typ := range dtypes16 {
		for _, nsrc := range []int{1, 2, 3, 8} {
			for _, n := range sumLengths {
				t.Run(fmt.Sprintf("%v/nsrc=%d/%d", typ, nsrc, n), func(t *testing.T) {
					for off := 0; off <= maxOff; off++ {
						srcs := make([][]uint16, nsrc)
						for k := range srcs {
							srcs[k] = randSlice16(r, typ, n)
						}
						checkSum16(t, typ, srcs, off, off%(nsrc+1)-1)
						checkSum16ToF32(t, typ, srcs, off)
					}
				})
			}
		}
	}
	t.Run("short src panics", func(t *testing.T) {
		require.Panics(t, func() { Sum16(dtype.BF16, make([]uint16, 64), [][]uint16{make([]uint16, 63)}) })
		require.Panics(t, func() { Sum16ToF32(dtype.F16, make([]float32, 64), [][]uint16{make([]uint16, 63)}) })
	})
}

// TestSum16Rounding pins sums whose f32 result sits exactly on a bf16/f16 rounding tie or
// overflows the 16-bit range, in both the vector body and the scalar tail.
func TestSum16Rounding(t *testing.T) {
	for _, typ := range dtypes16 {
		t.Run(typ.String(), func(t *testing.T) {
			var a, b []uint16
			for _, x := range []float32{1, 65504, 3.389531e38, 0x1p-24, 0x1p-14, 256, -1} {
				for _, y := range []float32{0x1p-8, 0x1p-9, 0x1p-11, 0x1p-12, 16, 32, 3.389531e38, 0x1p-25, -0x1p-24, 1} {
					a = append(a, dtype.FromF32(typ, x))
					b = append(b, dtype.FromF32(typ, y))
				}
			}
			checkSum16(t, typ, [][]uint16{a, b}, 0, -1)
			checkSum16(t, typ, [][]uint16{a[1:], b[1:]}, 1, 0)
			checkSum16ToF32(t, typ, [][]uint16{a, b}, 2)
		})
	}
}

func TestNoAllocs(t *testing.T) {
	const n = 1 << 14
	f := make([]float32, n)
	g := make([]float32, n)
	h := make([]uint16, n)
	srcs := [][]float32{f, g, f, g}
	srcs16 := [][]uint16{h, h, h}
	for _, c := range []struct {
		name string
		fn   func()
	}{
		{"AddF32", func() { AddF32(f, g) }},
		{"Widen/bf16", func() { Widen(dtype.BF16, f, h) }},
		{"Widen/f16", func() { Widen(dtype.F16, f, h) }},
		{"Narrow/bf16", func() { Narrow(dtype.BF16, h, f) }},
		{"Narrow/f16", func() { Narrow(dtype.F16, h, f) }},
		{"SumF32", func() { SumF32(f[:n-5], srcs) }},
		{"Sum16/bf16", func() { Sum16(dtype.BF16, h[:n-5], srcs16) }},
		{"Sum16/f16", func() { Sum16(dtype.F16, h[:n-5], srcs16) }},
		{"Sum16ToF32/bf16", func() { Sum16ToF32(dtype.BF16, f[:n-5], srcs16) }},
		{"sumF32Go", func() { sumF32Go(f[:n-5], srcs) }},
		{"sum16Go", func() { sum16Go(dtype.F16, h[:n-5], srcs16) }},
		{"sum16ToF32Go", func() { sum16ToF32Go(dtype.BF16, f[:n-5], srcs16) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(20, c.fn))
		})
	}
}
