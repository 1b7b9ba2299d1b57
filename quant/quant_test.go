package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// TestQuantizeDequantizeError: dequantized values stay within the format's resolution of
// the originals (a fraction of the block's range per value) and keep exact zeros blocks.
func TestQuantizeDequantizeError(t *testing.T) {
	// Relative RMS error bounds, above what each format achieves on these values (1% outliers of 20σ).
	bound := map[dtype.DType]float64{dtype.Q8_0: 0.02, dtype.Q4_0: 0.2, dtype.Q4_K: 0.15, dtype.Q5_K: 0.08, dtype.Q6_K: 0.05, dtype.Q5_0: 0.1, dtype.Q5_1: 0.07}
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range blockTypes {
		t.Run(typ.String(), func(t *testing.T) {
			n := 4 * 256
			x := randValues(r, n, 1)
			b := make([]byte, typ.Bytes(n))
			require.NoError(t, Quantize(typ, b, x))
			y := make([]float32, n)
			require.NoError(t, Dequantize(typ, y, b))
			var se, sx float64
			for i := range x {
				se += (float64(x[i]) - float64(y[i])) * (float64(x[i]) - float64(y[i]))
				sx += float64(x[i]) * float64(x[i])
			}
			require.Less(t, math.Sqrt(se/sx), bound[typ])
			zeros := make([]float32, typ.BlockSize())
			zb := make([]byte, typ.BlockBytes())
			require.NoError(t, Quantize(typ, zb, zeros))
			out := make([]float32, typ.BlockSize())
			require.NoError(t, Dequantize(typ, out, zb))
			for _, v := range out {
				require.Zero(t, v)
			}
		})
	}
}

func TestQuantizeErrors(t *testing.T) {
	require.ErrorContains(t, Quantize(dtype.F16, nil, nil), "f16 is not a block type")
	require.ErrorContains(t, Quantize(dtype.Q4_K, make([]byte, 144), make([]float32, 100)), "quantize 100 values to q4_k: want a whole number of 256-value blocks into 0 bytes, have 144 bytes")
	require.ErrorContains(t, Dequantize(dtype.Q8_0, make([]float32, 32), make([]byte, 33)), "dequantize 32 q8_0 values: want a whole number of 32-value blocks in 34 bytes, have 33 bytes")
	require.ErrorContains(t, Pack(dtype.Q4_0, make([]byte, 18), make([]byte, 18), 1, 64), "18 bytes are not a whole number of q4_0 rows of 64 values (36 bytes each)")
	require.ErrorContains(t, Pack(dtype.Q4_0, make([]byte, 36), make([]byte, 36), 1, 48), "q4_0 row of 48 values: not a whole number of 32-value blocks")
	require.ErrorContains(t, Pack(dtype.Q4_0, make([]byte, 36), make([]byte, 72), 1, 64), "repack 1 rows of q4_0: 72 bytes hold 2")
	require.ErrorContains(t, Pack(dtype.Q4_0, make([]byte, 36), make([]byte, 36), 1, 64), "the device matrix takes 576 bytes, have 36")
	require.ErrorContains(t, DequantizeRow(dtype.Q4_0, make([]float32, 64), make([]byte, 576), 1, 1), "dequantize row 1 of 1 rows")
	require.ErrorContains(t, QuantizeActs(Acts16x256, make([]byte, 1000), make([]float32, 128), 128), "want rows within whole 256-value blocks")
	require.ErrorContains(t, QuantizeActsAt(Acts16x32, make([]byte, 1000), make([]float32, 40), 40, 30, 64), "40 values in rows of 40 at column 30 of 64")
	require.ErrorContains(t, QuantizeActs(Acts16x32, make([]byte, 10), make([]float32, 64), 32), "quantize 2 rows of 32 activations as i16x32: 144 bytes needed, have 10")
	require.ErrorContains(t, QuantizeActs(0, nil, nil, 32), "unknown format")
}

// TestPackRoundTrip: Unpack inverts Pack, and a device row dequantizes to the values of
// its GGML row.
func TestPackRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, typ := range blockTypes {
		for _, cols := range []int{256, 768, 1280} {
			t.Run(fmt.Sprintf("%v/%d", typ, cols), func(t *testing.T) {
				rows := 3 + RowAlign(typ) // a whole group and a part of one where t groups rows
				ggml := make([]byte, rows*typ.Bytes(cols))
				require.NoError(t, Quantize(typ, ggml, randValues(r, rows*cols, 1)))
				dev := make([]byte, PackedBytes(typ, rows, cols))
				require.NoError(t, Pack(typ, dev, ggml, rows, cols))
				back := make([]byte, len(ggml))
				require.NoError(t, Unpack(typ, back, dev, rows, cols))
				require.Equal(t, ggml, back)
				want := make([]float32, rows*cols)
				require.NoError(t, Dequantize(typ, want, ggml))
				for row := range rows {
					got := make([]float32, cols)
					require.NoError(t, DequantizeRow(typ, got, dev, rows, row))
					require.Equal(t, want[row*cols:(row+1)*cols], got)
				}
			})
		}
	}
}

// TestActsQuantization: every value is within half a step of the block's scale, the
// largest magnitude maps to ±32767, zeros stay zero, and the 16-value sums are the sums of
// the values.
func TestActsQuantization(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, a := range allActs {
		t.Run(a.String(), func(t *testing.T) {
			cols := 2 * 256
			x := randValues(r, cols, 3)
			x[7] = 0 // zeros stay zero
			row := make([]byte, a.RowBytes(cols))
			require.NoError(t, QuantizeActs(a, row, x, cols))
			deq := dequantActs(a, row, cols)
			bs := a.Block()
			for b := range cols / bs {
				var amax float64
				for _, v := range x[b*bs : (b+1)*bs] {
					amax = max(amax, math.Abs(float64(v)))
				}
				const limit = splitLimit
				sawFull := false
				for i := b * bs; i < (b+1)*bs; i++ {
					q := actsValue(a, row, cols, i)
					sawFull = sawFull || q == limit || q == -limit
					require.InDelta(t, float64(x[i]), deq[i], amax/float64(limit)*0.501, "value %d", i)
				}
				require.True(t, sawFull, "block %d: the largest value maps to ±%d", b, limit)
			}
			require.Zero(t, actsValue(a, row, cols, 7))
			span, gs := a.sumSpan(), row[2*cols+4*(cols/bs):]
			for g := range cols / span {
				var sum int64
				for i := span * g; i < span*(g+1); i++ {
					sum += actsValue(a, row, cols, i)
				}
				require.Equal(t, sum, int64(int32(binary.LittleEndian.Uint32(gs[4*g:]))), "group %d", g)
			}
		})
	}
}

// TestActsNonFinite: a NaN or infinity in a block makes its scale NaN, so no output that
// reads the block is silently finite.
func TestActsNonFinite(t *testing.T) {
	for _, a := range allActs {
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
			x := make([]float32, 256)
			x[3], x[100] = 1, bad
			row := make([]byte, a.RowBytes(256))
			require.NoError(t, QuantizeActs(a, row, x, 256))
			typ := map[Acts]dtype.DType{Acts16x32: dtype.Q8_0, Acts16x256: dtype.Q6_K}[a]
			w := make([]byte, PackedBytes(typ, 1, 256))
			ones := make([]float32, 256)
			for i := range ones {
				ones[i] = 1
			}
			ggml := make([]byte, typ.Bytes(256))
			require.NoError(t, Quantize(typ, ggml, ones))
			require.NoError(t, Pack(typ, w, ggml, 1, 256))
			y := make([]float32, 1)
			Dot(typ, y, 1, row, 1, w, 1, 256, 0, 1)
			require.False(t, math.Abs(float64(y[0])) <= math.MaxFloat32, "%v with %v: got %v", a, bad, y[0])
		}
	}
}

// TestDotMatchesDequantized: every kernel's output is the dot product of the dequantized
// weights and the dequantized activations, within f32 rounding of the sums.
func TestDotMatchesDequantized(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range blockTypes {
		for _, cols := range []int{256, 512, 4096, 256 * 17} {
			t.Run(fmt.Sprintf("%v/%d", typ, cols), func(t *testing.T) {
				rows, m := 5, 3
				w := randRows(t, r, typ, rows, cols)
				x := randValues(r, m*cols, 1)
				a := ActsFor(typ)
				xq := make([]byte, m*a.RowBytes(cols))
				require.NoError(t, QuantizeActs(a, xq, x, cols))
				y := make([]float32, m*rows)
				Dot(typ, y, rows, xq, m, w, rows, cols, 0, rows)
				wd := make([]float32, cols)
				for i := range m {
					xd := dequantActs(a, xq[i*a.RowBytes(cols):], cols)
					for o := range rows {
						require.NoError(t, DequantizeRow(typ, wd, w, rows, o))
						var want, mag float64
						for c := range cols {
							want += float64(wd[c]) * xd[c]
							mag += math.Abs(float64(wd[c]) * xd[c])
						}
						require.InDelta(t, want, float64(y[i*rows+o]), mag*2e-6+1e-9, "row %d of x, output %d", i, o)
					}
				}
			})
		}
	}
}

// TestQuantizeActsAt: a shard's values placed at a column of zero-padded rows quantize as
// the padded rows do, and a dot product over the whole blocks equals the padded one.
func TestQuantizeActsAt(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, a := range allActs {
		width := 3 * a.Block()
		for _, shard := range []struct{ lead, cols int }{{0, 32}, {48, 96}, {a.Block() - 16, 32}, {0, width}} {
			if shard.lead+shard.cols > width {
				continue
			}
			x := randValues(r, 2*shard.cols, 1)
			padded := make([]float32, 2*width)
			for row := range 2 {
				copy(padded[row*width+shard.lead:], x[row*shard.cols:(row+1)*shard.cols])
			}
			want := make([]byte, 2*a.RowBytes(width))
			require.NoError(t, QuantizeActs(a, want, padded, width))
			got := make([]byte, len(want))
			require.NoError(t, QuantizeActsAt(a, got, x, shard.cols, shard.lead, width))
			require.Equal(t, want, got, "%v shard %+v", a, shard)
		}
	}
}
