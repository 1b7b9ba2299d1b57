//go:build amd64 && !noasm

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// kernelISAs are the instruction sets whose kernels this CPU runs; the test skips where
// it runs none.
func kernelISAs(t *testing.T) []string {
	isas := asmISAs()
	if len(isas) == 0 {
		t.Skip("this CPU runs none of the assembly kernels")
	}
	return isas
}

// guard is the value every output outside the rows a call computes must keep.
var guard = float32(math.Float32frombits(0x7fc0dead))

// requireKernelMatchesGo runs the kernels of isa and the Go kernel on the same random rows
// and requires bitwise equal outputs, and untouched guards around them.
func requireKernelMatchesGo(t *testing.T, isa string, typ dtype.DType, r *rand.Rand, rows, cols, m, o0, o1 int) {
	t.Helper()
	w := randRows(t, r, typ, rows, cols)
	a := ActsFor(typ)
	x := randValues(r, m*cols, 1)
	xq := make([]byte, m*a.RowBytes(cols))
	require.NoError(t, QuantizeActs(a, xq, x, cols))
	requireKernelMatchesGoOn(t, isa, typ, w, xq, rows, cols, m, o0, o1)
}

func requireKernelMatchesGoOn(t *testing.T, isa string, typ dtype.DType, w, xq []byte, rows, cols, m, o0, o1 int) {
	t.Helper()
	stride := rows + 3
	want, got := make([]float32, m*stride), make([]float32, m*stride)
	for i := range want {
		want[i], got[i] = guard, guard
	}
	dotRowsGo(typ, want, stride, xq, m, w, rows, cols, o0, o1)
	dotRowsISA(isa, typ, got, stride, xq, m, w, rows, cols, o0, o1)
	for i := range want {
		require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s %v output %d (row %d of x, weight row %d): Go %v, asm %v", isa, typ, i, i/stride, i%stride, want[i], got[i])
	}
}

// TestAsmKernelsExtremes: the integer sums stay exact, and the kernels bitwise the Go
// ones, where every product takes its largest magnitude: every weight byte (values,
// scales, mins, high bits) at 0xff (Q6_K's scales at -128, Q8_0's values at -128), the
// block scales 1, and activations of one magnitude, of one sign or alternating, and a row
// whose every activation is -128 (its low byte -128: the most negative sums of the AVX2
// kernels' word sums).
func TestAsmKernelsExtremes(t *testing.T) {
	for _, isa := range kernelISAs(t) {
		for _, typ := range blockTypes {
			t.Run(fmt.Sprintf("%s/%v", isa, typ), func(t *testing.T) { requireExtremesMatchGo(t, isa, typ) })
		}
	}
}

func requireExtremesMatchGo(t *testing.T, isa string, typ dtype.DType) {
	rows, cols := 13*RowAlign(typ)+1, 4*kBlock // 13 groups: eight, four and one in lockstep
	w, xq := extremeRows(t, typ, rows, cols)
	requireKernelMatchesGoOn(t, isa, typ, w, xq, rows, cols, 4, 0, rows)
}

// extremeRows returns the device matrix of TestAsmKernelsExtremes' weights (rows × cols)
// and its 4 rows of activations.
func extremeRows(t *testing.T, typ dtype.DType, rows, cols int) (w, xq []byte) {
	t.Helper()
	ggml := make([]byte, rows*typ.Bytes(cols))
	fill := byte(0xff)
	if typ == dtype.Q8_0 {
		fill = 0x80
	}
	for i := range ggml {
		ggml[i] = fill
	}
	bb := typ.BlockBytes()
	for b := 0; b < len(ggml); b += bb {
		switch typ {
		case dtype.Q6_K:
			for k := range 16 {
				ggml[b+q6KScales+k] = 0x80
			}
			putF16(ggml, b+q6KD, 1)
		case dtype.Q4_K, dtype.Q5_K:
			putF16(ggml, b+q4KD, 1)
			putF16(ggml, b+q4KDmin, 1)
		case dtype.Q5_1:
			putF16(ggml, b+q51D, 1)
			putF16(ggml, b+q51M, 1)
		default:
			putF16(ggml, b, 1)
		}
	}
	w = make([]byte, PackedBytes(typ, rows, cols))
	require.NoError(t, Pack(typ, w, ggml, rows, cols))
	a := ActsFor(typ)
	x := make([]float32, 3*cols)
	for i := range cols {
		x[i], x[cols+i], x[2*cols+i] = 1, -1, float32(1-2*(i%2))
	}
	rb := a.RowBytes(cols)
	xq = make([]byte, 4*rb)
	require.NoError(t, QuantizeActs(a, xq, x, cols))
	putActsInts(a, xq[3*rb:], -128, cols)
	return w, xq
}

// putActsInts writes a row of cols quantized activations all q (|q| ≤ splitLimit), each
// block's scale 1, as QuantizeActs lays them out.
func putActsInts(a Acts, row []byte, q int16, cols int) {
	bs, per := a.Block(), a.sumSpan()
	nb := cols / bs
	lo := int8(q)
	hi := int8((int32(q) - int32(lo)) / 256)
	for b := range nb {
		for i := range bs {
			row[2*bs*b+i], row[2*bs*b+bs+i] = byte(lo), byte(hi)
		}
		binary.LittleEndian.PutUint32(row[2*cols+4*b:], math.Float32bits(1))
	}
	sums := row[2*cols+4*nb:]
	for k := range cols / per {
		binary.LittleEndian.PutUint32(sums[4*k:], uint32(int32(per)*int32(q)))
	}
}

// TestAsmKernelsMinsSums: the K-quants' mins term stays exact for every size of the
// activations' sums over a sub-block that its splitting into signed bytes meets (the
// AVX-512 kernels split each sum A into a0 + 256·a1 + 65536·a2): sums at and around the
// carries of each byte, and the largest, of both signs, on rows of activations made
// directly (random weights, 13 groups).
func TestAsmKernelsMinsSums(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	var sums []int
	for _, s := range []int{0, 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, 0x7f7f, 0x8080, 0xff80, 0x17f80, 32 * splitLimit} {
		sums = append(sums, s, -s, s-1, -s+1)
	}
	sums = append(sums, 32*splitLimit-129, -32*splitLimit+128)
	cols := kBlock * ((len(sums) + 7) / 8)
	q := make([]int16, cols)
	for j, s := range sums {
		left := s // spread the sum over the sub-block's 32 values, each within ±splitLimit
		for i := range 32 {
			v := max(-splitLimit, min(splitLimit, left))
			q[32*j+i], left = int16(v), left-v
		}
		r.Shuffle(32, func(a, b int) { q[32*j+a], q[32*j+b] = q[32*j+b], q[32*j+a] })
	}
	xq := acts256FromValues(q, 1.0/splitLimit)
	for _, isa := range kernelISAs(t) {
		for _, typ := range []dtype.DType{dtype.Q4_K, dtype.Q5_K} {
			rows := 13*GroupRows + 5
			requireKernelMatchesGoOn(t, isa, typ, randRows(t, r, typ, rows, cols), xq, rows, cols, 1, 0, rows)
		}
	}
}

// acts256FromValues is a row of Acts16x256 holding the values q (|q| ≤ splitLimit), every
// block's scale d.
func acts256FromValues(q []int16, d float32) []byte {
	nb := len(q) / kBlock
	out := make([]byte, Acts16x256.RowBytes(len(q)))
	gs := out[2*len(q)+4*nb:]
	for b := range nb {
		binary.LittleEndian.PutUint32(out[2*len(q)+4*b:], math.Float32bits(d))
		for i, v := range q[kBlock*b : kBlock*(b+1)] {
			lo := int8(v)
			out[2*kBlock*b+i] = byte(lo)
			out[2*kBlock*b+kBlock+i] = byte(int8((int32(v) - int32(lo)) / 256))
			k := 16*b + i/16
			binary.LittleEndian.PutUint32(gs[4*k:], binary.LittleEndian.Uint32(gs[4*k:])+uint32(int32(v)))
		}
	}
	return out
}

// TestAsmKernelsMatchGo: every assembly kernel gives the Go kernel's bits for every count
// of blocks around the chunk sizes (1 to 40 32-value blocks, 1 to 20 super-blocks) on 5
// rows, 1 to 9 and the most on 13 groups and 5 rows (every lockstep width, AVX-512's eight
// and four, AVX2's eight, four and two, and one, then a cut group), every count of groups
// up to twice lockstepGroups and one, each with a cut group (every lockstep width beside
// every remainder, and runs spread over 1 to 4 groups a stream), row counts that end
// inside a group, sub-ranges of rows, 37 groups from the fourth (one call for the
// 32-value blocks, spread over 4 groups a stream; several for the K-quants) and several
// rows of activations.
func TestAsmKernelsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, isa := range kernelISAs(t) {
		for _, typ := range blockTypes {
			maxBlocks := 40
			if typ.BlockSize() == kBlock {
				maxBlocks = 20
			}
			g := RowAlign(typ)
			t.Run(fmt.Sprintf("%s/%v", isa, typ), func(t *testing.T) {
				for n := 1; n <= maxBlocks; n++ {
					requireKernelMatchesGo(t, isa, typ, r, 5, n*typ.BlockSize(), 1, 0, 5)
					if n <= 9 || n == maxBlocks {
						requireKernelMatchesGo(t, isa, typ, r, 13*g+5, n*typ.BlockSize(), 1, 0, 13*g+5)
					}
				}
				for groups := 1; groups <= 2*lockstepGroups+1; groups++ {
					requireKernelMatchesGo(t, isa, typ, r, groups*g+3, 3*typ.BlockSize(), 1, 0, groups*g+3)
				}
				requireKernelMatchesGo(t, isa, typ, r, 2*g+7, 16*typ.BlockSize(), 3, g, 2*g+6)
				requireKernelMatchesGo(t, isa, typ, r, 40*g+5, 2*typ.BlockSize(), 2, 3*g, 40*g+5) // one call, or several
				requireKernelMatchesGo(t, isa, typ, r, 300, 40*typ.BlockSize(), 2, 0, 300)
			})
		}
	}
}

// FuzzAsmKernels compares every assembly kernel with the Go kernel on fuzzed shapes and
// values.
func FuzzAsmKernels(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(1), uint8(2))
	f.Add(uint64(7), uint8(17), uint8(4), uint8(1))
	f.Add(uint64(3), uint8(5), uint8(200), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, blocks, rows, m uint8) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e37))
		for _, isa := range kernelISAs(t) {
			for _, typ := range blockTypes {
				n := 1 + int(blocks)%48
				if typ.BlockSize() == kBlock {
					n = 1 + int(blocks)%12
				}
				nr := 1 + int(rows) // up to 16 groups: every lockstep width of both instruction sets
				requireKernelMatchesGo(t, isa, typ, r, nr, n*typ.BlockSize(), 1+int(m)%4, 0, nr)
			}
		}
	})
}

// requireActsAsmMatchesGo quantizes one row with the assembly and with the Go loop and
// requires the same bytes.
func requireActsAsmMatchesGo(t *testing.T, a Acts, x []float32) {
	t.Helper()
	rb := a.RowBytes(len(x))
	want, got := make([]byte, rb), make([]byte, rb)
	var block [kBlock]float32
	quantRowGo(a, want, x, 0, len(x), &block)
	for _, avx512 := range []bool{true, false} {
		if avx512 && !vec.AcceleratedAVX512() {
			continue
		}
		clear(got)
		require.True(t, quantRowISA(a, got, x, avx512))
		require.Equal(t, want, got, "%v row of %d (AVX-512 %v)", a, len(x), avx512)
	}
}

// TestQuantActsAsmMatchesGo: the assembly quantizes rows of every length to the Go loop's
// bytes, zeros, huge and tiny values, NaN and infinities included.
func TestQuantActsAsmMatchesGo(t *testing.T) {
	if !vec.Accelerated() {
		t.Skip("this CPU runs no assembly quantizer")
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, a := range allActs {
		for nb := 1; nb <= 9; nb++ {
			x := randValues(r, nb*a.Block(), 1)
			requireActsAsmMatchesGo(t, a, x)
			clear(x[:a.Block()])
			x[len(x)-1] = 3e38
			x[len(x)-2] = 1e-40
			requireActsAsmMatchesGo(t, a, x)
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
				x[a.Block()/2] = bad
				requireActsAsmMatchesGo(t, a, x)
			}
		}
	}
}

// FuzzQuantActsAsm compares the assembly quantizer with the Go loop on fuzzed values.
func FuzzQuantActsAsm(f *testing.F) {
	f.Add(uint64(1), uint8(2), 1.0)
	f.Fuzz(func(t *testing.T, seed uint64, blocks uint8, scale float64) {
		if !vec.Accelerated() {
			t.Skip("this CPU runs no assembly quantizer")
		}
		r := rand.New(rand.NewPCG(seed, seed+1))
		for _, a := range allActs {
			x := randValues(r, (1+int(blocks)%8)*a.Block(), math.Abs(scale)+1e-30)
			requireActsAsmMatchesGo(t, a, x)
		}
	})
}
