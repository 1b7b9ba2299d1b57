package device_test

import (
	"fmt"
	"testing"

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
			n, err := device.NewNode(device.NodeConfig{Devices: 1, SMs: 2})
			require.NoError(b, err)
			defer n.Close()
			d, _ := n.Device(0)
			s, err := d.NewStream("s", 0)
			require.NoError(b, err)
			seq := make([]device.Kernel, 64)
			for i := range seq {
				seq[i] = device.Kernel{Name: "k", Grid: grid, Block: func(device.Block) error { return nil }}
			}
			for b.Loop() {
				require.NoError(b, s.LaunchSequence(seq))
				require.NoError(b, s.Synchronize())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(seq)), "ns/kernel")
		})
	}
}
