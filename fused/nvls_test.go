package fused

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
)

// TestNVLSGoesThroughMulticast: the fused NVLS variant, asked for or picked by Auto, has
// the multicast object load-reduce every element of the rows once and store it once, in
// both partitions (by columns below n tokens, by rows above) and over chunks; the other
// fused variants, which give its bits, leave the object untouched. The unfused pair over
// comm's NVLS goes through it as well.
func TestNVLSGoesThroughMulticast(t *testing.T) {
	const n, hidden = 4, 64
	for _, tc := range []struct {
		v    Variant
		algo comm.Algo // the communicator's forced all-reduce (Auto and Unfused follow it)
		nvls bool
	}{
		{NVLS, comm.Auto, true},
		{Auto, comm.NVLS, true},
		{Unfused, comm.NVLS, true},
		{OneShot, comm.Auto, false},
		{TwoShot, comm.Auto, false},
		{Tree, comm.Auto, false},
		{SeqParallel, comm.Auto, false},
	} {
		for _, tokens := range []int{1, 3, 100} { // 100 rows are two chunks of 64
			t.Run(fmt.Sprintf("%v/algo=%v/tokens=%d", tc.v, tc.algo, tokens), func(t *testing.T) {
				g := newRig(t, n, comm.Config{Algo: tc.algo, BufferBytes: 16 << 10})
				sh := Shape{Tokens: tokens, Hidden: hidden, Eps: 1e-5}
				g.load(t, sh)
				g.run(t, tc.v, sh)
				want := int64(0)
				if tc.nvls {
					want = int64(tokens * hidden)
				}
				require.Equal(t, device.MulticastCounts{LoadReduced: want, Stored: want}, g.c.Multicast().Counts(),
					"elements the %v call load-reduced and stored through the multicast object", tc.v)
			})
		}
	}
}
