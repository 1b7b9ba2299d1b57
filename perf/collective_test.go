package perf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// calibrationPoint is one published all-reduce time: bf16, bytes per rank, n ranks.
// nccl marks NCCL's ring (the model's fastest protocol); otherwise algo is tpslice's.
type calibrationPoint struct {
	source   string
	n        int
	bytes    int64
	algo     comm.Algo
	nccl     bool
	measured time.Duration
	// fit marks the points that determine the profile's constants (hw/calibration.go says
	// which constant each one fixes); the rest are held out.
	fit bool
}

const (
	kib = 1 << 10
	mib = 1 << 20
)

// h100Points are the published H100 measurements, sizes in binary units (0.5 MB = 512 KiB).
var h100Points = func() []calibrationPoint {
	µs := func(v float64) time.Duration { return time.Duration(v * 1e3) }
	vllm := "vLLM PR #24111 (4×H100)"
	triton := "Triton-distributed #57 (8×H100, torch.distributed)"
	sizes := []int64{mib / 2, mib, 2 * mib, 4 * mib}
	var ps []calibrationPoint
	for i, v := range []float64{10, 15, 22, 38} {
		ps = append(ps, calibrationPoint{vllm, 4, sizes[i], comm.OneShot, false, µs(v), i == 0 || i == 3})
	}
	for i, v := range []float64{17, 18, 27, 43} {
		ps = append(ps, calibrationPoint{vllm, 4, sizes[i], comm.TwoShot, false, µs(v), i == 0 || i == 3})
	}
	for i, v := range []float64{17, 19, 26, 37} {
		ps = append(ps, calibrationPoint{vllm, 4, sizes[i], comm.Ring, true, µs(v), i == 0 || i == 3})
	}
	for _, p := range []struct {
		bytes int64
		v     float64
		fit   bool
	}{{128, 19.19, true}, {16 * kib, 20.71, false}, {64 * kib, 23.05, true}, {256 * kib, 24.76, true},
		{mib, 32.42, true}, {4 * mib, 59.43, true}, {8 * mib, 90.51, false}, {16 * mib, 135.68, true}} {
		ps = append(ps, calibrationPoint{triton, 8, p.bytes, comm.Ring, true, µs(p.v), p.fit})
	}
	return ps
}()

func modelTime(t *testing.T, p hw.Profile, c calibrationPoint) (time.Duration, string) {
	if c.nccl {
		ch, d, err := CostsOf(p, NCCL).Choose(Collective{Op: device.OpAllReduce, Ranks: c.n, Bytes: c.bytes})
		require.NoError(t, err)
		return d, "nccl " + ch.Proto.String()
	}
	d, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: c.algo, Ranks: c.n, Bytes: c.bytes})
	require.NoError(t, err)
	return d, c.algo.String()
}

// TestCalibration: every published H100 point, fitted or held out, within ±20% of the
// h100-sxm model with the matching algorithm (NCCL: the ring with the protocol NCCL's tuner
// would pick, the fastest). H200 shares the fabric and the constants.
func TestCalibration(t *testing.T) {
	for _, name := range []string{"h100-sxm", "h200"} {
		p, err := hw.Lookup(name)
		require.NoError(t, err)
		for _, c := range h100Points {
			got, what := modelTime(t, p, c)
			ratio := got.Seconds() / c.measured.Seconds()
			role := "held out"
			if c.fit {
				role = "fit"
			}
			t.Logf("%s %s n=%d %7d B %-12s measured %6.2f µs, model %6.2f µs (%+5.1f%%, %s)",
				name, c.source, c.n, c.bytes, what, us(c.measured), us(got), 100*(ratio-1), role)
			require.InDelta(t, 1, ratio, 0.20, "%s: %s, n=%d, %d B, %s", name, c.source, c.n, c.bytes, what)
			if c.fit {
				require.InDelta(t, 1, ratio, 0.05, "a fitted point is reproduced to rounding")
			}
		}
	}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// TestIdealProfileIsTheSeedModel: h100-sxm-ideal prices an 8×H100 one-shot of 16 KiB at the
// seed's 3.3 µs (DESIGN.md's α-β table), the calibrated h100-sxm at 6–10 µs as published
// custom all-reduces measure, and NCCL near the published 19–21 µs.
func TestIdealProfileIsTheSeedModel(t *testing.T) {
	ideal, err := hw.Lookup("h100-sxm-ideal")
	require.NoError(t, err)
	calibrated, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	seed, err := CostsOf(ideal, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.OneShot, Ranks: 8, Bytes: 16 * kib})
	require.NoError(t, err)
	require.InDelta(t, 3.3, us(seed), 0.05)
	want, err := alphaBeta(ideal.Alpha, ideal.LinkBytesPerSec).Time(allReduce(comm.OneShot, 8, 16*kib))
	require.NoError(t, err)
	require.Equal(t, want, seed, "the ideal profile is the α-β model")
	require.Equal(t, ModelTable(idealised(ideal), 0, []int{2, 4, 8}, 64*mib), ModelTable(ideal, 0, []int{2, 4, 8}, 64*mib))

	got, err := CostsOf(calibrated, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.OneShot, Ranks: 8, Bytes: 16 * kib})
	require.NoError(t, err)
	require.True(t, got >= 6*time.Microsecond && got <= 10*time.Microsecond, "%v", got)
	_, nccl, err := CostsOf(calibrated, NCCL).Choose(Collective{Op: device.OpAllReduce, Ranks: 8, Bytes: 16 * kib})
	require.NoError(t, err)
	require.InDelta(t, 20, us(nccl), 1.5)
}

// TestCollectiveModel: one rank costs nothing, Lamport is priced as one-shot, an all-gather
// moves (n-1)·S, NCCL's fastest protocol moves from LL to LL128 to Simple as messages grow,
// and without a calibration only LL is modelled.
func TestCollectiveModel(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	for _, a := range []comm.Algo{comm.Ring, comm.OneShot, comm.TwoShot, comm.NVLS, comm.Lamport} {
		d, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: a, Ranks: 1, Bytes: mib})
		require.NoError(t, err)
		require.Zero(t, d, "%v", a)
	}
	one, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.OneShot, Ranks: 8, Bytes: 64 * kib})
	require.NoError(t, err)
	lamport, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.Lamport, Ranks: 8, Bytes: 64 * kib})
	require.NoError(t, err)
	require.Equal(t, one, lamport)
	gather, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllGather, Algo: comm.OneShot, Ranks: 8, Bytes: 64 * kib})
	require.NoError(t, err)
	require.Equal(t, one, gather, "one-shot all-gather and all-reduce both read (n-1)·S")
	_, err = CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllGather, Algo: comm.TwoShot, Ranks: 8, Bytes: 64 * kib})
	require.Error(t, err)

	for _, c := range []struct {
		bytes int64
		want  comm.Proto
	}{{128, comm.LL}, {256 * kib, comm.LL128}, {16 * mib, comm.Simple}} {
		ch, _, err := CostsOf(p, NCCL).Choose(Collective{Op: device.OpAllReduce, Ranks: 8, Bytes: c.bytes})
		require.NoError(t, err)
		require.Equal(t, c.want, ch.Proto, "%d B", c.bytes)
	}
	ideal, err := hw.Lookup("h100-sxm-ideal")
	require.NoError(t, err)
	_, err = CostsOf(ideal, NCCL).Time(Collective{Op: device.OpAllReduce, Proto: comm.LL128, Ranks: 8, Bytes: mib})
	require.Error(t, err)
	ch, d, err := CostsOf(ideal, NCCL).Choose(Collective{Op: device.OpAllReduce, Ranks: 8, Bytes: 16 * kib})
	require.NoError(t, err)
	require.Equal(t, comm.LL, ch.Proto)
	require.InDelta(t, 6.6+14*0.6+16.384/(450*0.25*8/14), us(d), 0.01, "NCCL tuner's ring/LL")
}

// TestStarPricedOnOneShotKernel: the star, which the calibration does not cover, is priced
// as one-shot's calibrated kernel with the star's α-β shape: 3/2 of one-shot's fixed cost
// (3 steps to 2) and 2(n-1)·S at one-shot's sustained bandwidth, so it never looks faster
// than one-shot as it would at the idealised α; without a calibration it is the α-β model's.
func TestStarPricedOnOneShotKernel(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	k := p.Calibration.OneShot
	for _, bytes := range []int64{16 * kib, mib, 64 * mib} {
		got, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.Star, Ranks: 8, Bytes: bytes})
		require.NoError(t, err)
		want := 1.5*k.Fixed.Seconds() + 14*float64(bytes)/(p.LinkBytesPerSec*k.Efficiency)
		require.InDelta(t, want*1e9, float64(got), 1, "%d B", bytes)
		one, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.OneShot, Ranks: 8, Bytes: bytes})
		require.NoError(t, err)
		require.Greater(t, got, one, "%d B: the star against one-shot", bytes)
	}
	ideal, err := hw.Lookup("h100-sxm-ideal")
	require.NoError(t, err)
	got, err := CostsOf(ideal, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.Star, Ranks: 8, Bytes: mib})
	require.NoError(t, err)
	want, err := alphaBeta(ideal.Alpha, ideal.LinkBytesPerSec).Time(allReduce(comm.Star, 8, mib))
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestHeldOutSGLangEager checks the calibration against a third, independent source that
// no constant was fitted to: SGLang PR #2904's H100 table for vLLM's custom all-reduce
// without CUDA graphs (sgl-project/sglang, "optimize custom allreduce kernel", the "vllm"
// table, ms per op at tp 2/4/8). Its "data size" is in elements: the benchmark
// (sgl-kernel/tests/test_trt_reduce.py) allocates torch tensors of shape (size,) in
// float32, so 1048576 is 4 MiB; read as bytes, 1 MiB at tp 4 would take 40 µs where vLLM
// PR #24111 measures 15–18 µs. Eager vLLM copies the input into its registered buffer
// (cudaMemcpyAsync) and then launches the kernel, one-shot for n = 2 or below 512 KB at n
// ≤ 4 or 256 KB at n ≤ 8 and two-shot above (vLLM's rule of that time), so the model
// prices two eagerly launched kernels, each its run or the host launch, whichever is
// longer, as plan --eager does. The tolerance is ±25%, not ±20%: the table is another
// vLLM version (January 2025, the fit's is September 2025), timed with the host clock over
// 5000 back-to-back calls, and the launch cost is the profile's stated 4 µs estimate.
func TestHeldOutSGLangEager(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	sizes := []int64{512, 4096, 32768, 262144, 524288, 1048576} // f32 elements
	ms := map[int][]float64{
		2: {0.0095, 0.0088, 0.0087, 0.0129, 0.0177, 0.0266},
		4: {0.0091, 0.0085, 0.0092, 0.0206, 0.0269, 0.0402},
		8: {0.0101, 0.0093, 0.0118, 0.0241, 0.0304, 0.0450},
	}
	for _, n := range []int{2, 4, 8} {
		row, pr := ms[n], pricer{p: p, world: n, eager: true, costs: CostsOf(p, TPSlice)}
		for i, elems := range sizes {
			bytes := 4 * elems
			algo := comm.TwoShot
			if n == 2 || (n <= 4 && bytes < 512*kib) || bytes < 256*kib {
				algo = comm.OneShot
			}
			cp, err := pr.kernel(device.Work{Class: device.ClassElementwise, Bytes: 2 * bytes})
			require.NoError(t, err)
			ar, err := pr.kernel(device.Work{Class: device.ClassCollective, Op: device.OpAllReduce, Algo: algo, Message: bytes})
			require.NoError(t, err)
			measured := time.Duration(row[i] * 1e6)
			ratio := (cp + ar).Seconds() / measured.Seconds()
			t.Logf("n=%d %8d B %-7s measured %5.1f µs, model %5.1f µs (%+5.1f%%)", n, bytes, algo, us(measured), us(cp+ar), 100*(ratio-1))
			require.InDelta(t, 1, ratio, 0.25, "n=%d, %d B", n, bytes)
		}
	}
}
