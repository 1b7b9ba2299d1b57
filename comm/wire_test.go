package comm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// wireBound is how far element i of a low-precision all-reduce may be from the exact sum
// of the inputs, derived from the formats (vals[p][i] is rank p's input as float64):
//
//	bf16 wire: 2^-8·|x_p| per input (round to nearest even, 8 significant bits)
//	fp8 wire:  2^-4·amax_p per input, amax_p the largest finite |x| of rank p's block of i
//	           (e4m3 keeps 4 significant bits; its subnormals err less than that)
//	f32 sum:   n·Σ|x|·2^-23, as Tolerance, of values up to 2^-4 larger
//	two-shot:  one more wire rounding of the sum (2^-8 of it, or 2^-4 of its block's amax)
//	16-bit t:  one final rounding to t, 2^-8 (bf16) or 2^-11 (f16) of the result
//
// Blocks of scale count from the chunk's start; the tests use chunks of whole blocks.
func wireBound(w Wire, algo Algo, t dtype.DType, vals [][]float64, i int) float64 {
	n := len(vals)
	count := len(vals[0])
	exactAt := func(j int) (exact, err float64) {
		abs := 0.0
		for p := range n {
			x := vals[p][j]
			exact += x
			abs += math.Abs(x)
			switch w {
			case WireBF16:
				err += 0x1p-8 * math.Abs(x)
			case WireFP8:
				err += 0x1p-4 * blockAmax(vals[p], j)
			}
		}
		return exact, err + float64(n)*abs*(1+0x1p-4)*0x1p-23 + 0x1p-126
	}
	exact, err := exactAt(i)
	if algo == TwoShot {
		switch w {
		case WireBF16:
			err += 0x1p-8 * (math.Abs(exact) + err)
		case WireFP8:
			amax := 0.0
			for j := i / vec.E4M3Block * vec.E4M3Block; j < min(count, (i/vec.E4M3Block+1)*vec.E4M3Block); j++ {
				s, e := exactAt(j)
				amax = max(amax, math.Abs(s)+e)
			}
			err += 0x1p-4 * amax
		}
	}
	switch t {
	case dtype.BF16:
		err += 0x1p-8 * (math.Abs(exact) + err)
	case dtype.F16:
		err += 0x1p-11*(math.Abs(exact)+err) + 0x1p-24
	}
	return err
}

func blockAmax(x []float64, i int) float64 {
	amax := 0.0
	for j := i / vec.E4M3Block * vec.E4M3Block; j < min(len(x), (i/vec.E4M3Block+1)*vec.E4M3Block); j++ {
		amax = max(amax, math.Abs(x[j]))
	}
	return amax
}

// checkWireAllReduce checks every rank's output against wireBound and rank 0's bits; on
// one rank, where the wire does not apply, the output is the input.
func checkWireAllReduce(t testing.TB, w Wire, algo Algo, ins, outs []*device.Buffer, count int) {
	t.Helper()
	n, dt := len(ins), ins[0].DType()
	if w == WireBF16 && dt != dtype.F32 {
		checkAllReduce(t, ins, outs, count) // 16-bit inputs move unchanged
		return
	}
	vals := make([][]float64, n)
	for p, in := range ins {
		vals[p] = make([]float64, count)
		for i := range count {
			vals[p][i] = elementF64(in, i)
		}
	}
	for i := range count {
		exact := 0.0
		for p := range n {
			exact += vals[p][i]
		}
		bound := wireBound(w, algo, dt, vals, i)
		if n == 1 {
			bound = 0
		}
		for r, out := range outs {
			got := elementF64(out, i)
			if math.Abs(got-exact) > bound || math.Float64bits(got) != math.Float64bits(elementF64(outs[0], i)) {
				require.Failf(t, "wrong all-reduce", "%v wire, %v: rank %d element %d: got %g, want %g ± %g (rank 0 has %g)",
					w, algo, r, i, got, exact, bound, elementF64(outs[0], i))
			}
		}
	}
}

// fillActivations writes inputs shaped like a layer's partial outputs: mostly normal
// values with a few large outliers per rank, which set their blocks' scales.
func fillActivations(bufs []*device.Buffer, count int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	for _, b := range bufs {
		for i := range count {
			v := rng.NormFloat64()
			if rng.IntN(40) == 0 {
				v *= 30
			}
			if b.DType() == dtype.F32 {
				b.Float32s()[i] = float32(v)
			} else {
				b.Uint16s()[i] = dtype.FromF32(b.DType(), float32(v))
			}
		}
	}
}

// TestWireAllReduce runs one-shot, two-shot and Auto on both low-precision wires for every
// world size, f32 and bf16 inputs, counts around the block of scale and the vector width,
// odd counts and counts beyond a chunk (4 KiB buffers: 1024 f32 per chunk).
func TestWireAllReduce(t *testing.T) {
	counts := []int{1, 7, 31, 32, 33, 95, 1000 + 3, 2*1024 + 5, 4096 + 3}
	for _, n := range []int{1, 2, 3, 4, 6, 8} {
		for _, w := range []Wire{WireBF16, WireFP8} {
			g := newGroup(t, n, device.NVSwitch, Config{BufferBytes: 4096, Wire: w})
			for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
				for _, count := range counts {
					ins, outs := g.alloc(t, dt, count), g.alloc(t, dt, count)
					for _, algo := range []Algo{OneShot, TwoShot, Auto} {
						t.Run(fmt.Sprintf("n=%d/%v/%v/count=%d/%v", n, w, dt, count, algo), func(t *testing.T) {
							fillActivations(ins, count, uint64(n*count))
							for r := range n {
								require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, ins[r], outs[r], count))
							}
							for r, err := range g.syncAll() {
								require.NoError(t, err, "rank %d", r)
							}
							if algo == Auto {
								algo = g.c.Pick(g.c.MessageBytes(count, dt)).Algo
							}
							checkWireAllReduce(t, w, algo, ins, outs, count)
						})
					}
				}
			}
		}
	}
}

// TestWireAllReduceBlocks runs messages of several kernel blocks, in place, so that the
// blocks' spans meet inside a chunk (they must meet at blocks of scale) and f16 too.
func TestWireAllReduceBlocks(t *testing.T) {
	if raceDetector {
		t.Skip("messages of several blocks take minutes under -race; TestWireBackToBack covers the races")
	}
	const count = 3*minBlockElems + 77
	for _, n := range []int{3, 8} {
		for _, w := range []Wire{WireBF16, WireFP8} {
			g := newGroup(t, n, device.NVSwitch, Config{Wire: w, Blocks: 4})
			for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
				for _, algo := range []Algo{OneShot, TwoShot} {
					t.Run(fmt.Sprintf("n=%d/%v/%v/%v", n, w, dt, algo), func(t *testing.T) {
						orig, bufs := g.alloc(t, dt, count), g.alloc(t, dt, count)
						fillActivations(orig, count, 5)
						for r := range bufs {
							copy(bufs[r].Uint16s(), orig[r].Uint16s())
						}
						for r := range n {
							require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, bufs[r], bufs[r], count))
						}
						for _, err := range g.syncAll() {
							require.NoError(t, err)
						}
						checkWireAllReduce(t, w, algo, orig, bufs, count)
					})
				}
			}
		}
	}
}

// TestWireDefaultPathUnchanged: without a wire (the zero Config, or WireExact spelled
// out), one-shot and two-shot give bit for bit the plain rank-order sum in f32 (rounded
// once for bf16), as they did before the wires existed.
func TestWireDefaultPathUnchanged(t *testing.T) {
	const count = 2*1024 + 37
	for _, n := range []int{2, 3, 8} {
		for _, cfg := range []Config{{BufferBytes: 4096}, {BufferBytes: 4096, Wire: WireExact}} {
			g := newGroup(t, n, device.NVSwitch, cfg)
			for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
				ins, outs := g.alloc(t, dt, count), g.alloc(t, dt, count)
				fillActivations(ins, count, 3)
				for _, algo := range []Algo{OneShot, TwoShot} {
					for r := range n {
						require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, ins[r], outs[r], count))
					}
					for _, err := range g.syncAll() {
						require.NoError(t, err)
					}
					for i := range count {
						var acc float32
						for p := range n {
							acc += float32(elementF64(ins[p], i))
						}
						want := math.Float32bits(acc)
						if dt == dtype.BF16 {
							want = math.Float32bits(dtype.BF16ToF32(dtype.F32ToBF16(acc)))
						}
						for r := range n {
							require.Equal(t, want, math.Float32bits(float32(elementF64(outs[r], i))), "n=%d %v %v rank %d element %d", n, dt, algo, r, i)
						}
					}
				}
				require.Equal(t, count*dt.Size(), g.c.MessageBytes(count, dt))
			}
		}
	}
}

// TestWireBackToBack issues 1000 small calls per wire without waiting in between, mixed
// algorithms, sizes and dtypes: fast ranks run ahead into the next call's staging while
// slow ones still decode. Run it under -race.
func TestWireBackToBack(t *testing.T) {
	const n, calls = 4, 1000
	for _, w := range []Wire{WireBF16, WireFP8} {
		t.Run(w.String(), func(t *testing.T) {
			g := newGroup(t, n, device.NVSwitch, Config{BufferBytes: 4096, Wire: w})
			rng := rand.New(rand.NewPCG(11, uint64(w)))
			type job struct {
				algo       Algo
				count      int
				ins, outs  []*device.Buffer
				ran, input Algo
			}
			jobs := make([]job, calls)
			for i := range jobs {
				count := []int{1, 5, 33, 100, 1500}[rng.IntN(5)]
				dt := []dtype.DType{dtype.F32, dtype.BF16}[rng.IntN(2)]
				j := job{algo: []Algo{Auto, OneShot, TwoShot}[rng.IntN(3)], count: count, ins: g.alloc(t, dt, count), outs: g.alloc(t, dt, count)}
				fillActivations(j.ins, count, uint64(i))
				jobs[i] = j
			}
			for _, j := range jobs {
				for r := range n {
					require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], j.algo, j.ins[r], j.outs[r], j.count))
				}
			}
			for _, err := range g.syncAll() {
				require.NoError(t, err)
			}
			for i, j := range jobs {
				algo := j.algo
				if algo == Auto {
					algo = g.c.Pick(g.c.MessageBytes(j.count, j.ins[0].DType())).Algo
				}
				t.Run(fmt.Sprintf("call%d", i), func(t *testing.T) { checkWireAllReduce(t, w, algo, j.ins, j.outs, j.count) })
			}
		})
	}
}

// TestWireNonFinite: on the fp8 wire an infinity or NaN of any rank makes that element NaN
// on every rank (e4m3 has no infinity) and leaves the rest of its block accurate; bf16
// keeps infinities.
func TestWireNonFinite(t *testing.T) {
	const n, count = 3, 64
	for _, w := range []Wire{WireBF16, WireFP8} {
		for _, algo := range []Algo{OneShot, TwoShot} {
			g := newGroup(t, n, device.NVSwitch, Config{Wire: w})
			ins, outs := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
			for p := range n {
				for i := range count {
					ins[p].Float32s()[i] = 1
				}
			}
			ins[1].Float32s()[5] = float32(math.Inf(1))
			ins[2].Float32s()[40] = float32(math.NaN())
			for r := range n {
				require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, ins[r], outs[r], count))
			}
			for _, err := range g.syncAll() {
				require.NoError(t, err)
			}
			for r := range n {
				out := outs[r].Float32s()
				if w == WireFP8 {
					require.True(t, math.IsNaN(float64(out[5])), "%v %v rank %d: Inf arrives as NaN", w, algo, r)
				} else {
					require.True(t, math.IsInf(float64(out[5]), 1), "%v %v rank %d: Inf stays Inf", w, algo, r)
				}
				require.True(t, math.IsNaN(float64(out[40])), "%v %v rank %d", w, algo, r)
				require.Equal(t, float32(3), out[4], "%v %v rank %d: the block's finite values keep their scale", w, algo, r)
			}
		}
	}
}

// TestWireRejectsOtherAlgorithms: an algorithm that does not run the wire is an error,
// forced in the Config or named in the call; Auto picks only one-shot and two-shot, on
// PCIe too (where the exact wire's rule takes the ring).
func TestWireRejectsOtherAlgorithms(t *testing.T) {
	node, err := device.NewNode(device.NodeConfig{Devices: 4, SMs: 2, Fabric: device.NVSwitch})
	require.NoError(t, err)
	t.Cleanup(func() { _ = node.Close() })
	for _, a := range []Algo{Ring, NVLS, Lamport, Tree} {
		_, err := New(node, Config{Algo: a, Wire: WireFP8})
		require.ErrorContains(t, err, fmt.Sprintf("algorithm %v forced, but it does not run the fp8 wire", a))
	}
	_, err = New(node, Config{Wire: Wire(9)})
	require.ErrorContains(t, err, "unknown Wire")

	g := newGroup(t, 4, device.NVSwitch, Config{Wire: WireBF16})
	in := g.alloc(t, dtype.F32, 16)
	for _, a := range []Algo{Ring, NVLS, Lamport, Tree} {
		require.ErrorContains(t, g.c.Rank(2).AllReduceAlgo(g.streams[2], a, in[2], in[2], 16),
			fmt.Sprintf("rank 2 allreduce: algorithm %v does not run the bf16 wire", a))
	}
	err = g.c.Rank(0).LaunchCollective(g.streams[0], Collective{Op: "x", Algo: NVLS, In: in[0], Out: in[0], Count: 16, OutCount: 16, Chunk: 16, Wire: true,
		Block: func(*CallCtx, device.Block, int, int) error { return nil }})
	require.ErrorContains(t, err, "rank 0 x: algorithm nvls does not run the bf16 wire")

	pcie := newGroup(t, 4, device.PCIe, Config{Wire: WireFP8})
	for _, bytes := range []int{64, 1 << 20, 64 << 20} {
		require.Contains(t, []Algo{OneShot, TwoShot}, pcie.c.Pick(bytes).Algo, "%d bytes", bytes)
	}
	require.Equal(t, TwoShot, g.c.Pick(8<<20).Algo)

	for _, s := range []string{"exact", "bf16", "fp8", "e4m3", " FP8 "} {
		_, err := ParseWire(s)
		require.NoError(t, err, s)
	}
	_, err = ParseWire("fp4")
	require.ErrorContains(t, err, `unknown all-reduce wire dtype "fp4" (want exact, bf16 or fp8)`)
}

// TestWireMessageBytes: the bytes a message takes on each wire, which the selector and the
// kernels' declared work (the cost model) see.
func TestWireMessageBytes(t *testing.T) {
	for _, c := range []struct {
		w     Wire
		t     dtype.DType
		count int
		want  int
	}{
		{WireExact, dtype.F32, 1000, 4000},
		{WireBF16, dtype.F32, 1000, 2000},
		{WireBF16, dtype.BF16, 1000, 2000},
		{WireFP8, dtype.F32, 1000, 1000 + 4*32},
		{WireFP8, dtype.BF16, 64, 64 + 8},
	} {
		g := newGroup(t, 2, device.NVSwitch, Config{Wire: c.w})
		require.Equal(t, c.want, g.c.MessageBytes(c.count, c.t), "%v %v %d", c.w, c.t, c.count)
	}
	one := newGroup(t, 1, device.NVSwitch, Config{Wire: WireFP8})
	require.Equal(t, 4000, one.c.MessageBytes(1000, dtype.F32), "one rank exchanges nothing: no wire")
}

// TestCompareExact: outputs that are the exact wire's result have no error; one element
// off by a known amount, or differing on one rank, is measured as such.
func TestCompareExact(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{})
	ins, outs := g.alloc(t, dtype.F32, 4), g.alloc(t, dtype.F32, 4)
	for p := range 2 {
		copy(ins[p].Float32s(), []float32{1, 2, -3, 0.5})
		copy(outs[p].Float32s(), []float32{2, 4, -6, 1})
	}
	require.Equal(t, WireError{}, CompareExact(ins, outs, 4))
	outs[0].Float32s()[1], outs[1].Float32s()[1] = 4.5, 4.5
	outs[1].Float32s()[3] = 1.25
	e := CompareExact(ins, outs, 4)
	require.Equal(t, 0.5, e.MaxAbs)
	require.Equal(t, 0.5/4, e.MaxRel, "|exact| = 4 is above the RMS")
	require.InDelta(t, math.Sqrt(0.25/4)/math.Sqrt((4+16+36+1)/4.0), e.RelRMS, 1e-12)
	require.Equal(t, 1, e.Differ)
}

// TestWireAutotune: on a wire, autotuning measures only one-shot and two-shot, at counts
// whose wire messages fill each bucket, and its table is not the exact wire's.
func TestWireAutotune(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{BufferBytes: 64 << 10, Wire: WireFP8})
	exact := newGroup(t, 2, device.NVSwitch, Config{BufferBytes: 64 << 10})
	require.NotEqual(t, exact.c.Fingerprint(dtype.F32), g.c.Fingerprint(dtype.F32))
	table, err := g.c.Autotune(g.streams, TuneOptions{MinBytes: 64, MaxBytes: 4 << 10, Measure: MeasureOptions{Target: time.Millisecond, Rounds: 2}})
	require.NoError(t, err)
	for _, row := range table.Rows {
		require.Contains(t, []Algo{OneShot, TwoShot}, row.Choice.Algo, "bucket %d", row.Bucket)
	}
	require.Equal(t, 910, g.c.countOnWire(1<<10, dtype.F32), "1 KiB of fp8 wire: 910 values and their 29 scales")
}
