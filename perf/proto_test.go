package perf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// TestAlphaBetaProtocol: the α-β model of a protocol, by hand at one point; LL wins small
// messages (its steps cost a seventh of Simple's) and loses large ones (half the
// bandwidth), LL128 loses little of either; protocols apply to ring and tree only.
func TestAlphaBetaProtocol(t *testing.T) {
	alpha, beta := 1500*time.Nanosecond, 450e9
	got, err := alphaBeta(alpha, beta).Time(Collective{Op: device.OpAllReduce, Algo: comm.Ring, Proto: comm.LL, Ranks: 8, Bytes: 16 * kib})
	require.NoError(t, err)
	lat := 0.47 / 3.4
	want := 1.5e-6 + 13*1.5e-6*lat + 2*7.0/8*16*1024/(beta*0.5)
	require.InDelta(t, want*1e6, us(got), 0.01)
	for _, a := range []comm.Algo{comm.Ring, comm.Tree} {
		at := func(p comm.Proto, bytes int64) time.Duration {
			d, err := alphaBeta(alpha, beta).Time(Collective{Op: device.OpAllReduce, Algo: a, Proto: p, Ranks: 8, Bytes: bytes})
			require.NoError(t, err)
			return d
		}
		require.Less(t, at(comm.LL, 4*kib), at(comm.LL128, 4*kib), "%v", a)
		require.Less(t, at(comm.LL128, 4*kib), at(comm.Simple, 4*kib), "%v", a)
		require.Less(t, at(comm.Simple, 256*mib), at(comm.LL128, 256*mib), "%v", a)
		require.Less(t, at(comm.LL128, 256*mib), at(comm.LL, 256*mib), "%v", a)
		simple, err := alphaBeta(alpha, beta).Time(allReduce(a, 8, mib))
		require.NoError(t, err)
		require.Equal(t, simple, at(comm.ProtoAuto, mib))
		one, err := alphaBeta(alpha, beta).Time(Collective{Op: device.OpAllReduce, Algo: a, Proto: comm.LL, Ranks: 1, Bytes: mib})
		require.NoError(t, err)
		require.Zero(t, one, "one rank exchanges nothing")
	}
	_, err = alphaBeta(alpha, beta).Time(Collective{Op: device.OpAllReduce, Algo: comm.OneShot, Proto: comm.LL, Ranks: 8, Bytes: kib})
	require.ErrorContains(t, err, "oneshot under protocol LL")
}

// TestCalibratedProtocol: on a calibrated profile a protocol scales the ring's per-step
// latency and efficiency (not its base); the model's table then picks a protocol for every
// ring or tree row; the graph pricer reads the kernel's protocol.
func TestCalibratedProtocol(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	c := p.Calibration.Ring
	got, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.Ring, Proto: comm.LL128, Ranks: 8, Bytes: 4 * mib})
	require.NoError(t, err)
	lat := 1.9 / 3.4
	want := c.Base.Seconds() + 14*c.PerStep.Seconds()*lat + 2*7.0/8*4*mib/(p.LinkBytesPerSec*c.Efficiency*120/128)
	require.InDelta(t, want*1e6, us(got), 0.01)
	_, err = CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllGather, Algo: comm.Ring, Proto: comm.LL, Ranks: 8, Bytes: mib})
	require.ErrorContains(t, err, "allgather ring under protocol LL: protocols apply to the ring's and the tree's all-reduce and reduce-scatter only")

	a100, err := hw.Lookup("a100-sxm") // no NVLS, so ring and tree rows come up
	require.NoError(t, err)
	withProto := 0
	for _, row := range ModelTable(a100, 0, []int{8}, 256*mib).Rows {
		require.Equal(t, comm.TakesProto(row.Choice.Algo), row.Choice.Proto != comm.ProtoAuto, "%+v", row)
		if row.Choice.Proto != comm.ProtoAuto {
			withProto++
		}
	}
	require.Positive(t, withProto, "a100-sxm's table should run ring or tree somewhere")
	pr := pricer{p: p, world: 8, costs: CostsOf(p, TPSlice)}
	work := device.Work{Class: device.ClassCollective, Op: device.OpAllReduce, Algo: comm.Tree, Proto: comm.LL, Message: 64 * kib}
	run, err := pr.collective(work)
	require.NoError(t, err)
	tree, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.Tree, Proto: comm.LL, Ranks: 8, Bytes: 64 * kib})
	require.NoError(t, err)
	require.Equal(t, tree, run)
}
