package comm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestNVLSGoesThroughMulticast: an NVLS all-reduce, forced or picked by a table, has the
// multicast object load-reduce every element of the message once and store it once
// (each rank its slice, over every chunk); the other algorithms, whose bits it shares,
// leave the object untouched. Results cannot tell NVLS from one-shot; the counts can.
func TestNVLSGoesThroughMulticast(t *testing.T) {
	const n, count = 4, 10_000 // three chunks of the 16 KiB staging buffer in f32
	table := &Table{Source: "test"}
	require.NoError(t, table.Set(TableRow{World: n, Bucket: Bucket(count * 4), Choice: Choice{Algo: NVLS}}))
	require.NoError(t, table.Set(TableRow{World: n, Bucket: Bucket(count * 2), Choice: Choice{Algo: NVLS}}))
	for _, tc := range []struct {
		algo Algo
		cfg  Config
		want int // elements load-reduced and stored per call
	}{
		{NVLS, Config{}, count},
		{Auto, Config{Table: table}, count},
		{OneShot, Config{}, 0},
		{TwoShot, Config{}, 0},
		{Lamport, Config{}, 0},
		{Ring, Config{}, 0},
		{Tree, Config{}, 0},
	} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			t.Run(fmt.Sprintf("%v/%v", tc.algo, dt), func(t *testing.T) {
				cfg := tc.cfg
				cfg.BufferBytes = 16 << 10
				g := newGroup(t, n, device.NVSwitch, cfg)
				ins, outs := g.alloc(t, dt, count), g.alloc(t, dt, count)
				Fill(ins, count, 7)
				g.allReduceOnce(t, Choice{Algo: tc.algo}, ins, outs, count)
				checkAllReduce(t, ins, outs, count)
				want := int64(tc.want)
				require.Equal(t, device.MulticastCounts{LoadReduced: want, Stored: want}, g.c.Multicast().Counts(),
					"elements the %v call load-reduced and stored through the multicast object", tc.algo)
			})
		}
	}
}
