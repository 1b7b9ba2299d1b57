package device_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// BenchmarkKernelDispatch is what a kernel costs beyond its blocks' work: empty blocks,
// launched as one sequence of 64 kernels (a replayed graph segment), on a stream of 2 SMs,
// with grids of 1 (one SM) up to 8 (every SM, several blocks each). ns/op is per kernel.
//
//	go test ./device -run '^$' -bench KernelDispatch
func BenchmarkKernelDispatch(b *testing.B) {
	for _, grid := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("grid=%d", grid), func(b *testing.B) {
			s := twoSMStream(b)
			seq := emptyKernels(64, grid)
			runSequences(b, s, seq)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(seq)), "ns/kernel")
		})
	}
}

// BenchmarkKernelOccupancy is how close kernels that keep both SMs of a stream busy come to
// their ideal time: sequences of 16 kernels of 8 blocks, each block computing for a quarter
// of the kernel's ideal time, so that 2 SMs would end a kernel in that time. wall/ideal
// above 1 is what a kernel loses to getting its second SM going (a woken core) and to
// handing its blocks out:
//
//	go test ./device -run '^$' -bench KernelOccupancy
func BenchmarkKernelOccupancy(b *testing.B) {
	for _, ideal := range []time.Duration{20 * time.Microsecond, 100 * time.Microsecond, 400 * time.Microsecond} {
		b.Run(fmt.Sprintf("kernel=%v", ideal), func(b *testing.B) {
			s := twoSMStream(b)
			seq := make([]device.Kernel, 16)
			for i := range seq {
				seq[i] = device.Kernel{Name: "k", Grid: 8, Block: func(device.Block) error { compute(ideal / 4); return nil }}
			}
			runSequences(b, s, seq)
			b.ReportMetric(float64(b.Elapsed())/float64(b.N*len(seq))/float64(ideal), "wall/ideal")
		})
	}
}

var computeSink float64

// compute keeps the core busy for d.
func compute(d time.Duration) {
	x := 1.0
	for start := time.Now(); time.Since(start) < d; {
		for range 100 {
			x = x*1.0000001 + 1e-9
		}
	}
	computeSink += x
}

// emptyKernels is n kernels of grid empty blocks: a sequence that costs only dispatch.
func emptyKernels(n, grid int) []device.Kernel {
	seq := make([]device.Kernel, n)
	for i := range seq {
		seq[i] = device.Kernel{Name: "k", Grid: grid, Block: func(device.Block) error { return nil }}
	}
	return seq
}

// twoSMStream is a stream of every SM of a one-device node of 2 SMs, closed when b ends.
func twoSMStream(b *testing.B) *device.Stream {
	n, err := device.NewNode(device.NodeConfig{Devices: 1, SMs: 2})
	require.NoError(b, err)
	b.Cleanup(func() { n.Close() })
	d, _ := n.Device(0)
	s, err := d.NewStream("s", 0)
	require.NoError(b, err)
	return s
}

// runSequences launches seq as one sequence and waits for it, b.N times.
func runSequences(b *testing.B, s *device.Stream, seq []device.Kernel) {
	b.ReportAllocs()
	for b.Loop() {
		require.NoError(b, s.LaunchSequence(seq))
		require.NoError(b, s.Synchronize())
	}
}
