package vec

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tpslice/tpslice/dtype"
)

// Each benchmark runs the exported function (named "asm" when the AVX2 kernels are active,
// "exported" otherwise) side by side with the portable Go implementation ("go"). SetBytes
// counts every byte read plus every byte written, so MB/s is memory traffic.
//
//	go test -run '^$' -bench . ./vec/
//	go test -run '^$' -bench . -tags noasm ./vec/   # the pure-Go build

var benchSizes = []struct {
	name string
	n    int
}{{"1K", 1 << 10}, {"64K", 1 << 16}, {"1M", 1 << 20}}

const benchSrcs = 8

func exportedName() string {
	if useAVX2 {
		return "asm"
	}
	return "exported"
}

func BenchmarkAddF32(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sz := range benchSizes {
		dst, src := randSliceF32(r, sz.n), randSliceF32(r, sz.n)
		for _, impl := range []struct {
			name string
			fn   func(dst, src []float32)
		}{{exportedName(), AddF32}, {"go", addF32Go}} {
			b.Run(fmt.Sprintf("n=%s/impl=%s", sz.name, impl.name), func(b *testing.B) {
				b.SetBytes(int64(12 * sz.n))
				for b.Loop() {
					impl.fn(dst, src)
				}
			})
		}
	}
}

func BenchmarkSumF32(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, sz := range benchSizes {
		srcs := make([][]float32, benchSrcs)
		for k := range srcs {
			srcs[k] = randSliceF32(r, sz.n)
		}
		dst := make([]float32, sz.n)
		for _, impl := range []struct {
			name string
			fn   func([]float32, [][]float32)
		}{{exportedName(), SumF32}, {"go", sumF32Go}} {
			b.Run(fmt.Sprintf("srcs=%d/n=%s/impl=%s", benchSrcs, sz.name, impl.name), func(b *testing.B) {
				b.SetBytes(int64(4 * sz.n * (benchSrcs + 1)))
				for b.Loop() {
					impl.fn(dst, srcs)
				}
			})
		}
	}
}

func BenchmarkSum16(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, typ := range dtypes16 {
		for _, sz := range benchSizes {
			srcs := make([][]uint16, benchSrcs)
			for k := range srcs {
				srcs[k] = randSlice16(r, typ, sz.n)
			}
			dst := make([]uint16, sz.n)
			for _, impl := range []struct {
				name string
				fn   func(dtype.DType, []uint16, [][]uint16)
			}{{exportedName(), Sum16}, {"go", sum16Go}} {
				b.Run(fmt.Sprintf("%v/srcs=%d/n=%s/impl=%s", typ, benchSrcs, sz.name, impl.name), func(b *testing.B) {
					b.SetBytes(int64(2 * sz.n * (benchSrcs + 1)))
					for b.Loop() {
						impl.fn(typ, dst, srcs)
					}
				})
			}
		}
	}
}

func BenchmarkSum16ToF32(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 4))
	typ := dtype.BF16
	for _, sz := range benchSizes {
		srcs := make([][]uint16, benchSrcs)
		for k := range srcs {
			srcs[k] = randSlice16(r, typ, sz.n)
		}
		dst := make([]float32, sz.n)
		for _, impl := range []struct {
			name string
			fn   func(dtype.DType, []float32, [][]uint16)
		}{{exportedName(), Sum16ToF32}, {"go", sum16ToF32Go}} {
			b.Run(fmt.Sprintf("%v/srcs=%d/n=%s/impl=%s", typ, benchSrcs, sz.name, impl.name), func(b *testing.B) {
				b.SetBytes(int64(2*sz.n*benchSrcs + 4*sz.n))
				for b.Loop() {
					impl.fn(typ, dst, srcs)
				}
			})
		}
	}
}

func BenchmarkWiden(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, typ := range dtypes16 {
		for _, sz := range benchSizes {
			src, dst := randSlice16(r, typ, sz.n), make([]float32, sz.n)
			for _, impl := range []struct {
				name string
				fn   func(dtype.DType, []float32, []uint16)
			}{{exportedName(), Widen}, {"go", widenGo}} {
				b.Run(fmt.Sprintf("%v/n=%s/impl=%s", typ, sz.name, impl.name), func(b *testing.B) {
					b.SetBytes(int64(6 * sz.n))
					for b.Loop() {
						impl.fn(typ, dst, src)
					}
				})
			}
		}
	}
}

func BenchmarkNarrow(b *testing.B) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, typ := range dtypes16 {
		for _, sz := range benchSizes {
			src, dst := randSliceF32(r, sz.n), make([]uint16, sz.n)
			for _, impl := range []struct {
				name string
				fn   func(dtype.DType, []uint16, []float32)
			}{{exportedName(), Narrow}, {"go", narrowGo}} {
				b.Run(fmt.Sprintf("%v/n=%s/impl=%s", typ, sz.name, impl.name), func(b *testing.B) {
					b.SetBytes(int64(6 * sz.n))
					for b.Loop() {
						impl.fn(typ, dst, src)
					}
				})
			}
		}
	}
}
