package collective

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestMeasure runs a small measurement as a program would: every choice at every size,
// Auto's choice from vLLM's rule, and with Check a count of wrong elements (none) that a
// run without it leaves out.
func TestMeasure(t *testing.T) {
	for _, check := range []bool{true, false} {
		op, err := ParseOp("allreduce", 2)
		require.NoError(t, err)
		sizes, err := SizeRange(1024, 4096, 4, dtype.F32)
		require.NoError(t, err)
		choices := op.Choices([]comm.Algo{comm.Ring, comm.OneShot}, []comm.Proto{comm.Simple})
		rep, err := Measure(Options{Op: op, DType: dtype.F32, Sizes: sizes, Choices: choices, SMs: 1, Fabric: device.NVSwitch,
			BufferBytes: comm.DefaultBufferBytes, Timeout: comm.DefaultTimeout, Check: check, Selector: "default",
			Measure: comm.MeasureOptions{Rounds: 1, MinIters: 1, Target: time.Microsecond}})
		require.NoError(t, err)
		require.Equal(t, "measured", rep.Source)
		require.Equal(t, 2, rep.Ranks)
		require.Contains(t, rep.Selector, "vLLM's rule")
		require.Len(t, rep.Rows, 2)
		for i, row := range rep.Rows {
			require.Equal(t, []int64{1024, 4096}[i], row.SizeBytes)
			require.Equal(t, "oneshot", row.Auto)
			require.Len(t, row.Results, 2)
			for j, res := range row.Results {
				require.Equal(t, []string{"ring/Simple", "oneshot"}[j], res.Algo)
				require.Positive(t, res.TimeUS)
				if check {
					require.NotNil(t, res.Wrong, res.Algo)
					require.Zero(t, *res.Wrong, res.Algo)
				} else {
					require.Nil(t, res.Wrong, res.Algo)
				}
			}
		}
	}
}

// TestOpSizesAndRefusals: reduce-scatter and all-gather keep the sizes that split into
// whole elements per rank, and bad ops, factors and ranges are refused naming the flag.
func TestOpSizesAndRefusals(t *testing.T) {
	op, err := ParseOp("reducescatter", 4)
	require.NoError(t, err)
	sizes, err := op.Sizes([]int64{8, 16, 40, 64}, dtype.F32)
	require.NoError(t, err)
	require.Equal(t, []int64{16, 32, 64}, sizes, "whole multiples of 4 ranks × 4 bytes, without repeats")
	_, err = op.Sizes([]int64{8}, dtype.F32)
	require.ErrorContains(t, err, "--end: reducescatter needs at least n·4 = 16 bytes")
	_, err = ParseOp("broadcast", 4)
	require.ErrorContains(t, err, `--op: want allreduce, reducescatter or allgather, got "broadcast"`)
	_, err = SizeRange(8, 64, 1, dtype.F32)
	require.ErrorContains(t, err, "--factor: want at least 2, got 1")
	_, err = op.Algos("twoshot", device.NVSwitch, 1)
	require.ErrorContains(t, err, "--algo: reducescatter runs oneshot (direct) or ring, not twoshot")
}

// TestMeasureRefusesBadOptions: nothing to measure, or timing that could not run a call,
// is refused before the node is built.
func TestMeasureRefusesBadOptions(t *testing.T) {
	op, err := ParseOp("allreduce", 2)
	require.NoError(t, err)
	ok := Options{Op: op, DType: dtype.F32, Sizes: []int64{1024}, Choices: []comm.Choice{{Algo: comm.OneShot}}, Fabric: device.NVSwitch,
		Selector: "default", Measure: comm.MeasureOptions{Rounds: 1, MinIters: 1}}
	for _, tc := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Sizes = nil }, "no size or no algorithm to measure"},
		{func(o *Options) { o.Choices = nil }, "no size or no algorithm to measure"},
		{func(o *Options) { o.Measure.Rounds = 0 }, "--iters and --rounds must be at least 1"},
		{func(o *Options) { o.Measure.MinIters = 0 }, "--iters and --rounds must be at least 1"},
	} {
		o := ok
		tc.edit(&o)
		_, err := Measure(o)
		require.ErrorContains(t, err, tc.want)
	}
}

// kernelLog is a device.Tracer that keeps each kernel's name and device.
type kernelLog struct {
	mu      sync.Mutex
	kernels []string
}

func (l *kernelLog) KernelDone(s device.KernelSpan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kernels = append(l.kernels, fmt.Sprintf("%s on device %d", s.Kernel.Name, s.Stream.Device().ID()))
}

// TestMeasureTracesOneCall: with Trace set, the tracer sees one call of each choice at the
// last size, a kernel per rank (the message fits one chunk), and none of the measured calls.
func TestMeasureTracesOneCall(t *testing.T) {
	op, err := ParseOp("allreduce", 2)
	require.NoError(t, err)
	log := &kernelLog{}
	choices := []comm.Choice{{Algo: comm.Ring, Proto: comm.LL}, {Algo: comm.Star}}
	_, err = Measure(Options{Op: op, DType: dtype.F32, Sizes: []int64{1024, 4096}, Choices: choices, SMs: 1, Fabric: device.NVSwitch,
		BufferBytes: comm.DefaultBufferBytes, Timeout: comm.DefaultTimeout, Selector: "default", Trace: log,
		Measure: comm.MeasureOptions{Rounds: 2, MinIters: 3, Warmup: 1, Target: time.Microsecond}})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{
		"allreduce.ring/LL on device 0", "allreduce.ring/LL on device 1",
		"allreduce.star on device 0", "allreduce.star on device 1",
	}, log.kernels)
}
